-- Package environments: a named set of Python requirements and npm packages, and its builds.
-- A build's folder is content-addressed (spec_hash); `ready_build` is the one runs use and
-- changes only when a newer build is ready, so a failed build never replaces it.
create table environment (
    name text primary key,
    python_requirements text not null default '',
    npm_packages text not null default '',
    allow_sdists integer not null default 0,
    is_default integer not null default 0,
    version integer not null default 1,
    ready_build integer,
    created_at text not null default (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    updated_at text not null default (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    updated_by text not null
);
create unique index environment_one_default on environment (is_default) where is_default = 1;

create table environment_build (
    id integer primary key autoincrement,
    environment text not null,
    spec_hash text not null,
    status text not null check (status in ('building', 'ready', 'failed')),
    stage text not null default '',
    log text not null default '',
    lock text not null default '[]',
    size_bytes integer,
    verification text not null default '[]',
    started_at text not null default (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    finished_at text,
    started_by text not null
);
create index environment_build_by_environment on environment_build (environment, id);
create index environment_build_by_hash on environment_build (spec_hash);

-- Bumped with every change that alters what a provider's Environment field stands for (a new
-- ready build, a new default, a deletion): consoles rebuild their active provider when it moves.
create table environment_generation (
    id integer primary key check (id = 1),
    value integer not null
);
insert into environment_generation (id, value) values (1, 0);
