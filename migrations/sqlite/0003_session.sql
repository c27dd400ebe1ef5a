-- Browser sessions, in the exact shape tower-sessions-sqlx-store reads and writes
-- (its own `migrate()` would create the same table; keeping it here keeps the schema in one place).
-- expiry_date is a unix timestamp in seconds.
create table session (
    id text primary key not null,
    data blob not null,
    expiry_date integer not null
);
create index session_expiry_date on session (expiry_date);
