//! The sign-in limiter's rule, case by case, on a clock the tests move by hand.

use super::*;

const HOME: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
const AWAY: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 7));

fn address(n: u8) -> IpAddr {
    IpAddr::V4(std::net::Ipv4Addr::new(198, 51, 100, n))
}

/// A wrong password: the attempt stays counted.
fn fail(limiter: &LoginLimiter, account: &str, from: IpAddr) -> Result<(), Duration> {
    limiter.begin(account, from).map(Attempt::failed)
}

fn succeed(limiter: &LoginLimiter, account: &str, from: IpAddr) -> Result<(), Duration> {
    limiter.begin(account, from).map(Attempt::succeeded)
}

/// Two consoles on one database (as replicas are): failures counted by either count for
/// both, with the same rule as in memory.
#[tokio::test]
async fn consoles_sharing_a_database_share_the_sign_in_counts() {
    let (_dir, pool) = crate::server::db::scratch().await;
    let rule = || LoginLimiter::new(3, 100, 100, Duration::from_secs(60));
    let one = SignInLimits::Shared(SharedLoginLimiter::new(rule(), pool.clone()));
    let two = SignInLimits::Shared(SharedLoginLimiter::new(rule(), pool.clone()));

    for limiter in [&one, &two, &one] {
        drop(limiter.begin("alice", AWAY).await.unwrap());
    }
    match two.begin("alice", AWAY).await {
        Err(Refusal::Wait(wait)) => assert!(
            wait > Duration::from_secs(58) && wait <= Duration::from_secs(60),
            "{wait:?}"
        ),
        other => panic!("the fourth failure from AWAY is refused: {other:?}"),
    }
    // Another address is not affected, and a success there takes nothing back from AWAY.
    one.begin("alice", HOME).await.unwrap().succeeded().await;
    assert!(matches!(
        one.begin("alice", AWAY).await,
        Err(Refusal::Wait(_))
    ));
    // Withdrawn attempts are not failures.
    for _ in 0..5 {
        two.begin("bob", HOME).await.unwrap().withdrawn().await;
    }
    assert!(one.begin("bob", HOME).await.is_ok());
}

#[test]
fn an_address_locks_itself_out_of_an_account_and_nobody_else() {
    let limiter = LoginLimiter::new(3, 100, 100, Duration::from_secs(60));
    for _ in 0..3 {
        assert!(fail(&limiter, "alice", AWAY).is_ok());
    }
    let wait = fail(&limiter, "alice", AWAY).unwrap_err();
    assert!(
        wait > Duration::from_secs(58) && wait <= Duration::from_secs(60),
        "{wait:?}"
    );
    assert!(
        succeed(&limiter, "alice", HOME).is_ok(),
        "the account is still open from another address"
    );
    assert!(fail(&limiter, "bob", AWAY).is_ok());
}

#[test]
fn attempts_in_flight_count_before_their_outcome_is_known() {
    let limiter = LoginLimiter::new(3, 100, 100, Duration::from_secs(60));
    let pending: Vec<_> = (0..3)
        .map(|_| limiter.begin("alice", AWAY).unwrap())
        .collect();

    let fourth = limiter.begin("alice", AWAY);

    assert!(
        fourth.is_err(),
        "three concurrent guesses use up the budget"
    );
    drop(fourth);
    pending.into_iter().next().unwrap().succeeded();
    assert!(
        succeed(&limiter, "alice", AWAY).is_ok(),
        "a right password clears the pair"
    );
}

#[test]
fn address_locks_after_its_limit_across_accounts() {
    let limiter = LoginLimiter::new(100, 4, 100, Duration::from_secs(60));
    for n in 0..4 {
        fail(&limiter, &format!("user{n}"), HOME).unwrap();
    }
    assert!(fail(&limiter, "someone-new", HOME).is_err());
    assert!(fail(&limiter, "someone-new", AWAY).is_ok());
}

#[test]
fn made_up_and_real_names_are_refused_alike_and_an_address_stops_adding_names() {
    // The 2026-12-06 probe told existing names from made-up ones by when the 429 came.
    let limiter = LoginLimiter::new(5, 20, 100, Duration::from_secs(900));
    for name in ["admin", "nobody-here"] {
        for _ in 0..5 {
            fail(&limiter, name, AWAY).unwrap();
        }
        assert!(
            fail(&limiter, name, AWAY).is_err(),
            "{name}: the sixth is refused"
        );
    }
    // The address' own limit (20) caps how many names it can add keys for.
    let mut added = 0;
    for n in 0..100 {
        if fail(&limiter, &format!("spray{n}"), HOME).is_ok() {
            added += 1;
        }
    }
    assert_eq!(added, 20);
    let state = limiter.state.lock().unwrap();
    assert!(
        state.failures.len() <= 2 * 3 + 20 * 2 + 1,
        "{}",
        state.failures.len()
    );
}

#[test]
fn past_the_account_ceiling_unknown_addresses_back_off_and_known_ones_do_not() {
    let (clock, hand) = Clock::manual();
    let limiter = LoginLimiter::new(5, 100, 4, Duration::from_secs(900)).with_clock(clock);
    succeed(&limiter, "admin", HOME).unwrap();
    for n in 0..4 {
        fail(&limiter, "admin", address(n)).unwrap();
    }
    assert!(
        limiter.begin("admin", address(50)).is_ok(),
        "at the ceiling, not past it"
    );
    let first = fail(&limiter, "admin", address(51)).unwrap_err();
    assert_eq!(first, Duration::from_secs(1));
    hand.advance(Duration::from_millis(1100));
    fail(&limiter, "admin", address(5)).unwrap();
    let third = fail(&limiter, "admin", address(52)).unwrap_err();
    assert!(
        third > Duration::from_secs(1) && third <= Duration::from_secs(2),
        "doubles with each failure past the ceiling: {third:?}"
    );
    assert!(
        succeed(&limiter, "admin", HOME).is_ok(),
        "the address the admin signed in from is never throttled by strangers"
    );
}

#[test]
fn the_backoff_never_exceeds_the_window() {
    let limiter = LoginLimiter::new(1000, 1000, 1, Duration::from_secs(60));
    for n in 0..40 {
        let _ = fail(&limiter, "admin", address(n));
    }
    limiter.state.lock().unwrap().failures.insert(
        Key::Account("admin".into()),
        std::iter::repeat_n(Instant::now(), 40).collect(),
    );
    let wait = fail(&limiter, "admin", AWAY).unwrap_err();
    assert!(wait <= Duration::from_secs(60), "{wait:?}");
}

#[test]
fn failures_expire_with_the_window_and_success_clears_the_pair() {
    let (clock, hand) = Clock::manual();
    let limiter =
        LoginLimiter::new(1, 100, 100, Duration::from_millis(30)).with_clock(clock.clone());
    fail(&limiter, "alice", HOME).unwrap();
    assert!(fail(&limiter, "alice", HOME).is_err());
    hand.advance(Duration::from_millis(40));
    assert!(succeed(&limiter, "alice", HOME).is_ok());

    limiter.state.lock().unwrap().failures.insert(
        Key::Pair("carol".into(), HOME),
        VecDeque::from([clock.now()]),
    );
    let _ = succeed(&limiter, "carol", AWAY);
    assert!(
        fail(&limiter, "carol", HOME).is_err(),
        "success elsewhere forgives nothing here"
    );
}

/// The account's backoff runs from when the last failure was known, not from when its
/// password check began: a check that took seconds does not use up the wait (CI: argon2 on a
/// loaded machine took longer than the 1 s backoff, and the next address was let through).
#[test]
fn a_slow_wrong_password_is_timed_from_its_end() {
    let (clock, hand) = Clock::manual();
    let limiter = LoginLimiter::new(5, 100, 1, Duration::from_secs(900)).with_clock(clock);
    fail(&limiter, "admin", address(0)).unwrap();
    let slow = limiter.begin("admin", address(1)).unwrap();
    hand.advance(Duration::from_secs(5));
    slow.failed();

    let next = limiter.begin("admin", address(2)).map(drop);

    assert_eq!(
        next,
        Err(Duration::from_secs(1)),
        "past the ceiling, the next address waits the whole second after the failure"
    );
}

/// The same on a shared database: the failure's rows carry the time it was known.
#[tokio::test]
async fn a_shared_wrong_password_is_timed_from_its_end() {
    let (_dir, pool) = crate::server::db::scratch().await;
    let rule = LoginLimiter::new(5, 100, 100, Duration::from_secs(900));
    let limits = SignInLimits::Shared(SharedLoginLimiter::new(rule, pool.clone()));
    let attempt = limits.begin("admin", AWAY).await.unwrap();
    let began: Vec<i64> = sqlx::query_scalar("select at_ms from login_failure")
        .fetch_all(&pool)
        .await
        .unwrap();
    let mut known = crate::server::db::clock::unix_millis();
    while known <= began.iter().copied().max().unwrap() {
        tokio::task::yield_now().await;
        known = crate::server::db::clock::unix_millis();
    }

    attempt.failed().await;

    let ended: Vec<i64> = sqlx::query_scalar("select at_ms from login_failure")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(ended.len(), 3, "still counted under all three keys");
    assert!(
        ended.iter().all(|at| *at >= known),
        "{began:?} -> {ended:?}"
    );
}

#[test]
fn the_first_wait_past_the_ceiling_is_the_configured_backoff_and_doubles() {
    let (clock, hand) = Clock::manual();
    let limiter = LoginLimiter::new(5, 100, 1, Duration::from_secs(900))
        .with_backoff(Duration::from_secs(30))
        .with_clock(clock);
    fail(&limiter, "admin", address(0)).unwrap();
    fail(&limiter, "admin", address(1)).unwrap();

    let first = fail(&limiter, "admin", address(2)).unwrap_err();
    hand.advance(Duration::from_secs(30));
    fail(&limiter, "admin", address(3)).unwrap();
    let second = fail(&limiter, "admin", address(4)).unwrap_err();

    assert_eq!(first, Duration::from_secs(30));
    assert_eq!(second, Duration::from_secs(60));
}
