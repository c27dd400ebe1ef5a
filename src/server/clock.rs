//! Where a limiter reads the time: the real clock, or one a test moves by hand (so a test of a
//! time window never waits for the window, nor depends on how long a busy machine takes).

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> Instant + Send + Sync>);

impl Clock {
    pub fn now(&self) -> Instant {
        (self.0)()
    }

    /// A clock that stands still until the returned hand moves it on.
    pub fn manual() -> (Clock, Hand) {
        let start = Instant::now();
        let moved = Arc::new(Mutex::new(Duration::ZERO));
        let read = moved.clone();
        let clock = Clock(Arc::new(move || start + *read.lock().expect("clock lock")));
        (clock, Hand(moved))
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock(Arc::new(Instant::now))
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Clock")
    }
}

/// Moves a [`Clock::manual`] on.
#[derive(Clone, Debug)]
pub struct Hand(Arc<Mutex<Duration>>);

impl Hand {
    pub fn advance(&self, by: Duration) {
        *self.0.lock().expect("clock lock") += by;
    }
}
