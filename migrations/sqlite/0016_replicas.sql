-- What replicas of one console on one database share besides the rest of the schema.
-- Requests each API key made in the last minute, for a per-key rate limit that holds across
-- replicas (a console alone on SQLite counts in memory and leaves this empty).
create table api_request (
    key_id integer not null,
    at_ms integer not null
);
create index api_request_key on api_request (key_id, at_ms);
-- Background jobs (retention, expiry sweeps, orphan sweeps): when each last ran and where. A
-- replica runs a job only when it wins this row for the round, so N replicas run it once.
create table background_job (
    name text primary key not null,
    last_run_at text not null,
    replica text not null,
    runs integer not null default 0
);
-- Failed (and pending) sign-ins inside the sign-in limits' window, by what they count against:
-- `pair|<address>|<account>`, `address|<address>`, `account|<account>`; and the addresses
-- each account signed in from (exempt from the account's throttle). Kept here when replicas
-- share the database, so the limits hold across them.
create table login_failure (
    id integer primary key autoincrement,
    key text not null,
    at_ms integer not null
);
create index login_failure_key on login_failure (key, at_ms);
create index login_failure_at on login_failure (at_ms);
create table login_known (
    account text not null,
    address text not null,
    at_ms integer not null,
    primary key (account, address)
);
-- A build under way says it is alive with each progress note; a build whose console stopped
-- (or died) stops saying so, and is marked interrupted by whichever replica notices.
alter table environment_build add column heartbeat_at text;
