//! History rows the database would not take, kept on the local disk until it does: JSON lines
//! in the data directory's `history-spool/`. Each row is appended and synced (a row the
//! console answered for must survive a crash). The process that holds the spool's lock (the
//! console) owns it: it writes numbered segments, drains them oldest first, and deletes a
//! segment only once every row of it is committed. Another process on the same data
//! directory (a CLI command beside a running console) is a guest: it appends to a file of its
//! own, which the owner adopts once the guest has finished with it (or is gone). What is left
//! when the console stops is written at its next start.

use std::{
    fs::{File, OpenOptions},
    io::{BufRead, BufReader, Write},
    os::unix::fs::OpenOptionsExt,
    path::{Path, PathBuf},
    sync::Mutex,
};

use crate::server::db::history_row::HistoryRow;

/// Rows per segment before a new one is started (a segment is read whole to be written: with
/// content kept a row may hold up to a MiB).
const SEGMENT_ROWS: usize = 200;
const SUFFIX: &str = ".jsonl";
const GUEST: &str = "guest-";
const PART: &str = ".part";
const LOCK: &str = ".owner";

#[derive(Debug)]
struct Open {
    number: u64,
    file: File,
    rows: usize,
}

#[derive(Debug)]
enum Role {
    /// Holds the lock (the file stays open, and locked, while the spool lives).
    Owner(#[allow(dead_code)] File),
    Guest,
}

#[derive(Debug)]
pub struct Spool {
    dir: PathBuf,
    role: Mutex<Role>,
    open: Mutex<Option<Open>>,
}

/// A sealed segment and its rows (a half-written last line, from a crash, is left out).
#[derive(Debug)]
pub struct Segment {
    path: PathBuf,
    pub rows: Vec<HistoryRow>,
}

impl Spool {
    /// The spool in `dir` (created, mode 0700: rows may hold code and output), owned by this
    /// process unless another one holds it.
    pub fn open(dir: &Path) -> std::io::Result<Spool> {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(dir.join(LOCK))?;
        let role =
            match rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => Role::Owner(lock),
                Err(_) => Role::Guest,
            };
        Ok(Spool {
            dir: dir.to_owned(),
            role: Mutex::new(role),
            open: Mutex::new(None),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn owns(&self) -> bool {
        matches!(*self.role.lock().expect("role lock"), Role::Owner(_))
    }

    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn numbers(&self) -> Vec<u64> {
        let mut numbers: Vec<u64> = self
            .names()
            .iter()
            .filter_map(|name| name.strip_suffix(SUFFIX)?.parse().ok())
            .collect();
        numbers.sort_unstable();
        numbers
    }

    fn path(&self, number: u64) -> PathBuf {
        self.dir.join(format!("{number:020}{SUFFIX}"))
    }

    fn guest_part(&self) -> PathBuf {
        self.dir
            .join(format!("{GUEST}{}{PART}", std::process::id()))
    }

    /// A guest takes the spool over once its owner is gone (the lock is free): its own file is
    /// handed in like any guest's, for `adopt` to take. Returns the rows that file held (this
    /// process counted them already), or `None` while another process owns the spool.
    pub fn try_own(&self) -> Option<usize> {
        let mut role = self.role.lock().expect("role lock");
        if matches!(*role, Role::Owner(_)) {
            return None;
        }
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(self.dir.join(LOCK))
            .ok()?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).ok()?;
        self.seal_all();
        let own = read(&self.guest_part()).len();
        self.hand_in();
        *role = Role::Owner(lock);
        Some(own)
    }

    /// Rows waiting: the owner's segments, or a guest's own file.
    pub fn count(&self) -> usize {
        match self.owns() {
            true => self
                .numbers()
                .into_iter()
                .map(|n| read(&self.path(n)).len())
                .sum(),
            false => read(&self.guest_part()).len(),
        }
    }

    /// Takes in what guests left (finished files, and the files of guests that are gone) as
    /// segments of the owner's; returns how many rows came in. A guest does nothing here.
    pub fn adopt(&self) -> usize {
        if !self.owns() {
            return 0;
        }
        let mut adopted = 0;
        for name in self.names() {
            let Some(rest) = name.strip_prefix(GUEST) else {
                continue;
            };
            let finished = rest.ends_with(SUFFIX);
            let orphan = rest
                .strip_suffix(PART)
                .and_then(|pid| pid.parse::<u32>().ok())
                .is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
            if !(finished || orphan) {
                continue;
            }
            // Numbered under the lock new segments are numbered under: never a name in use.
            let mut open = self.open.lock().expect("spool lock");
            *open = None;
            let number = self.numbers().last().map_or(1, |n| n + 1);
            let from = self.dir.join(&name);
            let rows = read(&from).len();
            if std::fs::rename(&from, self.path(number)).is_ok() {
                adopted += rows;
            }
        }
        adopted
    }

    /// Closes the open segment: the next row starts a new one.
    fn seal_all(&self) {
        *self.open.lock().expect("spool lock") = None;
    }

    /// Appends `row` and syncs it to disk.
    pub fn append(&self, row: &HistoryRow) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(row).map_err(std::io::Error::other)?;
        line.push(b'\n');
        // Held to the end: the role cannot change while a row is being placed.
        let role = self.role.lock().expect("role lock");
        let owns = matches!(*role, Role::Owner(_));
        let mut open = self.open.lock().expect("spool lock");
        if open.as_ref().is_none_or(|o| o.rows >= SEGMENT_ROWS && owns) {
            let (number, path) = match owns {
                true => {
                    let number = self.numbers().last().map_or(1, |n| n + 1);
                    (number, self.path(number))
                }
                false => (0, self.guest_part()),
            };
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(path)?;
            *open = Some(Open {
                number,
                file,
                rows: 0,
            });
        }
        let segment = open.as_mut().expect("a segment is open");
        segment.file.write_all(&line)?;
        segment.file.sync_data()?;
        segment.rows += 1;
        Ok(())
    }

    /// The owner's oldest segment, sealed (new rows go to a new one from now on), or `None`
    /// when there is none (always for a guest).
    pub fn oldest(&self) -> Option<Segment> {
        if !self.owns() {
            return None;
        }
        let first = *self.numbers().first()?;
        {
            let mut open = self.open.lock().expect("spool lock");
            if open.as_ref().is_some_and(|o| o.number == first) {
                *open = None;
            }
        }
        let path = self.path(first);
        Some(Segment {
            rows: read(&path),
            path,
        })
    }

    /// Deletes a segment whose rows are all committed.
    pub fn done(&self, segment: Segment) -> std::io::Result<()> {
        std::fs::remove_file(&segment.path)
    }

    /// A guest hands its file over to the owner (it will not write to it again).
    pub fn finish(&self) {
        if self.owns() {
            return;
        }
        self.seal_all();
        self.hand_in();
    }

    /// Renames this process's guest file to a finished one (the owner adopts those).
    fn hand_in(&self) {
        let part = self.guest_part();
        if part.exists() {
            let stamp = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let finished = self
                .dir
                .join(format!("{GUEST}{}-{stamp}{SUFFIX}", std::process::id()));
            if let Err(error) = std::fs::rename(&part, &finished) {
                tracing::warn!(%error, "cannot hand the history spool file to the console");
            }
        }
    }
}

fn read(path: &Path) -> Vec<HistoryRow> {
    let Ok(file) = File::open(path) else {
        return Vec::new();
    };
    BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter_map(|line| serde_json::from_str(&line).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(n: usize) -> HistoryRow {
        HistoryRow {
            key: format!("k{n}"),
            created_at: "2026-12-06T00:00:00.000Z".into(),
            caller: "c".into(),
            caller_kind: "cli".into(),
            source: "cli".into(),
            provider: "local".into(),
            language: "python".into(),
            status: "success".into(),
            exit_code: Some(0),
            duration_ms: 1,
            code_sha256: "x".into(),
            input_bytes: 1,
            output_bytes: 1,
            error: None,
            code: None,
            stdout: None,
            stderr: None,
            egress: None,
            session_id: None,
        }
    }

    #[test]
    fn rows_come_back_in_order_across_segments_and_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        {
            let spool = Spool::open(dir.path()).unwrap();
            assert!(spool.owns());
            for n in 0..SEGMENT_ROWS + 5 {
                spool.append(&row(n)).unwrap();
            }
            // A crash in the middle of a line leaves half a line: it is not a row.
            let last = spool.numbers().last().copied().unwrap();
            let mut file = OpenOptions::new()
                .append(true)
                .open(spool.path(last))
                .unwrap();
            file.write_all(b"{\"key\": \"half").unwrap();
        }

        let again = Spool::open(dir.path()).unwrap();
        assert_eq!(again.count(), SEGMENT_ROWS + 5);
        let first = again.oldest().unwrap();
        assert_eq!(first.rows.len(), SEGMENT_ROWS);
        assert_eq!(first.rows[0].key, "k0");
        again.done(first).unwrap();
        again.append(&row(9999)).unwrap();
        let second = again.oldest().unwrap();
        assert_eq!(second.rows.len(), 5);
        again.done(second).unwrap();
        let third = again.oldest().unwrap();
        assert_eq!(third.rows[0].key, "k9999");
        again.done(third).unwrap();
        assert!(again.oldest().is_none());
    }

    #[test]
    fn a_guest_beside_the_owner_hands_its_rows_over() {
        let dir = tempfile::tempdir().unwrap();
        let owner = Spool::open(dir.path()).unwrap();
        owner.append(&row(1)).unwrap();
        // Another open in the same process is refused the lock as another process would be.
        let guest = Spool::open(dir.path()).unwrap();
        assert!(!guest.owns());
        guest.append(&row(2)).unwrap();
        guest.append(&row(3)).unwrap();
        assert_eq!(guest.count(), 2);
        assert!(guest.oldest().is_none(), "a guest never drains");
        assert_eq!(owner.adopt(), 0, "a live guest's file is its own");

        guest.finish();

        assert_eq!(owner.adopt(), 2);
        let keys: Vec<String> = std::iter::from_fn(|| {
            let segment = owner.oldest()?;
            let keys: Vec<String> = segment.rows.iter().map(|r| r.key.clone()).collect();
            owner.done(segment).unwrap();
            Some(keys)
        })
        .flatten()
        .collect();
        assert_eq!(keys, ["k1", "k2", "k3"]);
    }

    #[test]
    fn a_guest_takes_the_spool_over_once_its_owner_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let owner = Spool::open(dir.path()).unwrap();
        owner.append(&row(1)).unwrap();
        let guest = Spool::open(dir.path()).unwrap();
        guest.append(&row(2)).unwrap();
        assert_eq!(guest.try_own(), None, "the owner still holds the lock");

        drop(owner);

        assert_eq!(guest.try_own(), Some(1), "its own row was handed in");
        assert!(guest.owns());
        assert_eq!(guest.adopt(), 1);
        guest.append(&row(3)).unwrap();
        let keys: Vec<String> = std::iter::from_fn(|| {
            let segment = guest.oldest()?;
            let keys: Vec<String> = segment.rows.iter().map(|r| r.key.clone()).collect();
            guest.done(segment).unwrap();
            Some(keys)
        })
        .flatten()
        .collect();
        assert_eq!(keys, ["k1", "k2", "k3"]);
    }
}
