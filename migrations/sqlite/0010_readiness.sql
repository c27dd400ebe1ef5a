-- One row that /readyz rewrites on each check: a console whose database takes reads but not
-- writes (a full disk, another process holding the write lock) loses history and refuses
-- saves, so it is not ready, and only a real write tells.
create table readiness (
    id integer primary key check (id = 1),
    checked_at text not null,
    created_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
