-- The modules a sandbox started ahead imports before its run arrives, separated by spaces
-- (those the environment has not installed are skipped). Not part of a build's spec.
alter table environment add column preload text not null default 'numpy pandas matplotlib matplotlib.pyplot';
