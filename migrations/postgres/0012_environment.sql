-- PostgreSQL twin of migrations/sqlite/0012. Yes/no columns stay 0/1 integers, as on SQLite.
create table environment (
    name text collate "C" primary key,
    python_requirements text collate "C" not null default '',
    npm_packages text collate "C" not null default '',
    allow_sdists bigint not null default 0,
    is_default bigint not null default 0,
    version bigint not null default 1,
    ready_build bigint,
    created_at text collate "C" not null default (to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')),
    updated_at text collate "C" not null default (to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')),
    updated_by text collate "C" not null
);
create unique index environment_one_default on environment (is_default) where is_default = 1;

create table environment_build (
    id bigserial primary key,
    environment text collate "C" not null,
    spec_hash text collate "C" not null,
    status text collate "C" not null check (status in ('building', 'ready', 'failed')),
    stage text collate "C" not null default '',
    log text collate "C" not null default '',
    lock text collate "C" not null default '[]',
    size_bytes bigint,
    verification text collate "C" not null default '[]',
    started_at text collate "C" not null default (to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')),
    finished_at text collate "C",
    started_by text collate "C" not null
);
create index environment_build_by_environment on environment_build (environment, id);
create index environment_build_by_hash on environment_build (spec_hash);

create table environment_generation (
    id bigint primary key check (id = 1),
    value bigint not null
);
insert into environment_generation (id, value) values (1, 0);
