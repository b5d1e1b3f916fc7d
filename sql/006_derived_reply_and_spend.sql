-- Step records keep only what a step added. The reply is no longer a state field (it is the
-- round's agent turn, stored once in turns), and round_spend in a step's update is that step's
-- own spend, [calls, prompt_tokens, completion_tokens, cost], which the reducer adds up, instead
-- of the round's running total.

UPDATE supportbot.steps SET update = update - 'reply' WHERE update ? 'reply';
UPDATE supportbot.checkpoints SET state = state - 'reply' WHERE state ? 'reply';

-- Running totals to each step's own share: within a round, a total minus the one before it.
WITH totals AS (
    SELECT ticket_id, seq, update -> 'round_spend' AS cur,
           lag(update -> 'round_spend') OVER (PARTITION BY ticket_id, round ORDER BY seq) AS prev
    FROM supportbot.steps
    WHERE update ? 'round_spend' AND jsonb_typeof(update -> 'round_spend') = 'object'
)
UPDATE supportbot.steps s SET update = jsonb_set(s.update, '{round_spend}', jsonb_build_array(
    (t.cur ->> 'calls')::integer - coalesce((t.prev ->> 'calls')::integer, 0),
    (t.cur ->> 'prompt_tokens')::integer - coalesce((t.prev ->> 'prompt_tokens')::integer, 0),
    (t.cur ->> 'completion_tokens')::integer - coalesce((t.prev ->> 'completion_tokens')::integer, 0),
    (t.cur ->> 'cost')::double precision - coalesce((t.prev ->> 'cost')::double precision, 0)))
FROM totals t
WHERE s.ticket_id = t.ticket_id AND s.seq = t.seq;
