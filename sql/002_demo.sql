-- The demo business system: what a host application would have in its own databases. Lets the
-- CLI and the tests run out of the box; replace it by implementing supportbot.backend.Backend.

CREATE SCHEMA IF NOT EXISTS demo;

CREATE TABLE demo.customers (
    id         text PRIMARY KEY,
    name       text NOT NULL,
    company    text NOT NULL DEFAULT '',
    email      text NOT NULL UNIQUE,
    phone      text NOT NULL DEFAULT '',
    is_vip     boolean NOT NULL DEFAULT false,
    created_at date NOT NULL
);

CREATE TABLE demo.subscriptions (
    id            text PRIMARY KEY,
    customer_id   text NOT NULL REFERENCES demo.customers (id) ON DELETE CASCADE,
    plan          text NOT NULL,
    billing_cycle text NOT NULL,
    status        text NOT NULL,
    started_on    date NOT NULL,
    renews_on     date,
    amount        numeric(12, 2) NOT NULL
);
CREATE INDEX subscriptions_customer ON demo.subscriptions (customer_id);

CREATE TABLE demo.invoices (
    id              text PRIMARY KEY,
    customer_id     text NOT NULL REFERENCES demo.customers (id) ON DELETE CASCADE,
    subscription_id text REFERENCES demo.subscriptions (id) ON DELETE CASCADE,
    amount          numeric(12, 2) NOT NULL,
    currency        text NOT NULL DEFAULT 'CNY',
    issued_on       date NOT NULL,
    status          text NOT NULL
);
CREATE INDEX invoices_customer ON demo.invoices (customer_id);

-- Tickets the business system already closed before supportbot, with structured facts.
CREATE TABLE demo.past_tickets (
    id          text PRIMARY KEY,
    customer_id text NOT NULL REFERENCES demo.customers (id) ON DELETE CASCADE,
    subject     text NOT NULL,
    resolved_on date,
    facts       jsonb NOT NULL
);
CREATE INDEX past_tickets_customer ON demo.past_tickets (customer_id);

CREATE SEQUENCE demo.refund_numbers;
CREATE TABLE demo.refunds (
    id              text PRIMARY KEY,
    ticket_id       text NOT NULL,
    customer_id     text NOT NULL REFERENCES demo.customers (id) ON DELETE CASCADE,
    invoice_id      text NOT NULL REFERENCES demo.invoices (id) ON DELETE CASCADE,
    amount          numeric(12, 2) NOT NULL CHECK (amount > 0),
    currency        text NOT NULL,
    reason          text NOT NULL,
    status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
    request_key     text NOT NULL UNIQUE,
    decision_key    text UNIQUE,
    decided_by      text,
    decided_at      timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE demo.escalations (
    id              bigserial PRIMARY KEY,
    ticket_id       text NOT NULL,
    customer_email  text NOT NULL,
    reason          text NOT NULL,
    idempotency_key text NOT NULL UNIQUE,
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE demo.ticket_closures (
    ticket_id       text NOT NULL,
    customer_email  text NOT NULL,
    resolution      text NOT NULL,
    idempotency_key text PRIMARY KEY,
    closed_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE demo.kb_articles (
    id       text PRIMARY KEY,
    title    text NOT NULL,
    category text NOT NULL,
    body     text NOT NULL,
    url      text NOT NULL
);
