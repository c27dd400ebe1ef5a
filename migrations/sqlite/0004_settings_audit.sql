-- Every change to a sandbox setting: who, when, which provider, which keys changed.
-- Secret values never appear here (only the names of changed keys).
create table settings_audit (
    id integer primary key autoincrement,
    actor text not null,
    setting text not null,
    provider text,
    action text not null,
    changed_keys text not null check (json_valid(changed_keys)),
    created_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
create index settings_audit_created_at on settings_audit (created_at);
