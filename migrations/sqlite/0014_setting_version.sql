-- Every saved version of a provider's settings, so an admin can see what changed and bring an
-- older one back (Restore). Secret fields are kept in their sealed form, as in system_setting.
-- version is the system_setting version the row became; it is null for a version saved
-- without being applied ("Save anyway (inactive)" on the active provider, after its health
-- check failed). action: save, restore (restored_from names the row) or kept (not applied).
create table setting_version (
    id integer primary key autoincrement,
    setting text not null,
    provider text not null,
    version integer,
    value text not null check (json_valid(value)),
    action text not null,
    restored_from integer,
    saved_by text,
    saved_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
create index setting_version_setting on setting_version (setting, id);
-- What is stored today is each provider's first known version.
insert into setting_version (setting, provider, version, value, action, saved_by, saved_at)
select name, substr(name, 9), version, value, 'save', updated_by, updated_at
from system_setting
where name like 'sandbox.%' and name <> 'sandbox.provider_type';
