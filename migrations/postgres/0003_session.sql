-- PostgreSQL twin of migrations/sqlite/0003: browser sessions, in the exact shape
-- tower-sessions-sqlx-store's PostgresStore reads and writes (there expiry_date is a
-- timestamptz; the console points the store at this table in the current schema).
create table session (
    id text collate "C" primary key not null,
    data bytea not null,
    expiry_date timestamptz not null
);
create index session_expiry_date on session (expiry_date);
