-- The console's search: a ticket by id fragment, subject or any turn's text (the first message is
-- turn 0), in Chinese and English alike. The search is a case-insensitive substring match (ILIKE), which is
-- right for both languages (no word splitting, which Chinese has no spaces for); pg_trgm's
-- trigram indexes make it fast on large tables. pg_trgm ships with PostgreSQL's contrib and is a
-- trusted extension (the database owner may create it); where it cannot be created the index is
-- left out and the search still answers, by scanning. Only turns are indexed: they are written
-- once, while a ticket row gets a new version every round (its subject stays unindexed).

DO $$
BEGIN
    BEGIN
        CREATE EXTENSION IF NOT EXISTS pg_trgm;
    EXCEPTION WHEN insufficient_privilege OR undefined_file OR feature_not_supported THEN
        RAISE NOTICE 'pg_trgm is not available (%): the console searches without trigram indexes', SQLERRM;
        RETURN;
    END;
    -- The operator class is named with the extension's schema: it may live outside the search path.
    EXECUTE format('CREATE INDEX turns_content_trgm ON supportbot.turns USING gin (content %I.gin_trgm_ops)',
                   (SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_trgm'));
END $$;
