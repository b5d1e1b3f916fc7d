-- API keys of the integrations that call the HTTP API (supportbot.http): a chat widget, a mobile
-- app, another service. Only a digest of each key's secret is stored (SHA-256 of the random secret;
-- the key itself is shown once, when it is made). A key acts for the customers of its integration
-- only: addresses in `customers`, an entry `@domain` for a whole domain, `*` for any.

CREATE TABLE supportbot.api_keys (
    id              text PRIMARY KEY CHECK (id ~ '^[a-z0-9]{8,32}$'),
    name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    secret_sha256   text NOT NULL CHECK (secret_sha256 ~ '^[0-9a-f]{64}$'),
    customers       text[] NOT NULL CHECK (cardinality(customers) BETWEEN 1 AND 1000),
    rate_per_minute integer NOT NULL DEFAULT 120 CHECK (rate_per_minute BETWEEN 1 AND 100000),
    created_by      text NOT NULL CHECK (length(created_by) BETWEEN 1 AND 200),
    created_at      timestamptz NOT NULL DEFAULT now(),
    revoked_at      timestamptz
);
