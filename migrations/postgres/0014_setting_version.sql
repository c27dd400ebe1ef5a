-- PostgreSQL twin of migrations/sqlite/0014.
create table setting_version (
    id bigserial primary key,
    setting text collate "C" not null,
    provider text collate "C" not null,
    version bigint,
    value text collate "C" not null check (value::jsonb is not null),
    action text collate "C" not null,
    restored_from bigint,
    saved_by text collate "C",
    saved_at text collate "C" not null default (to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
);
create index setting_version_setting on setting_version (setting, id);
insert into setting_version (setting, provider, version, value, action, saved_by, saved_at)
select name, substr(name, 9), version, value, 'save', updated_by, updated_at
from system_setting
where name like 'sandbox.%' and name <> 'sandbox.provider_type';
