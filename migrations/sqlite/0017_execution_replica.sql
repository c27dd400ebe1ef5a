-- Which console replica ran each run ('' for runs recorded before replicas were named).
alter table execution add column replica text not null default '';
create index execution_replica on execution (replica);
