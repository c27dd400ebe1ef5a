-- PostgreSQL twin of migrations/sqlite/0016.
create table api_request (
    key_id bigint not null,
    at_ms bigint not null
);
create index api_request_key on api_request (key_id, at_ms);
create table background_job (
    name text collate "C" primary key not null,
    last_run_at text collate "C" not null,
    replica text collate "C" not null,
    runs bigint not null default 0
);
create table login_failure (
    id bigserial primary key,
    key text collate "C" not null,
    at_ms bigint not null
);
create index login_failure_key on login_failure (key, at_ms);
create index login_failure_at on login_failure (at_ms);
create table login_known (
    account text collate "C" not null,
    address text collate "C" not null,
    at_ms bigint not null,
    primary key (account, address)
);
alter table environment_build add column heartbeat_at text collate "C";
