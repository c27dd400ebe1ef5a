//! What an allowed connection's bytes claim, checked all along the connection, not only at
//! its start: the program's side is held back until what it claims is known, then released
//! as it checks out.
//!
//! - TLS: the ClientHello's server name must be the name the program looked up (on ports 80
//!   and 443 it must have one). What follows is encrypted and passes unread.
//! - Plain HTTP/1: **every** request on the connection (kept alive or pipelined) is read up to
//!   its end: exactly one `Host`, naming the looked-up name, and a target that is a path or
//!   an absolute URI on that name too. `CONNECT`, any upgrade (HTTP/2 in clear text, plain
//!   WebSocket: after one nothing more can be read), a body framed two ways, a line ended by a
//!   bare LF and unreadable heads are refused.
//! - Anything else: refused on ports 80 and 443; passes on other ports (databases, SSH).
//!
//! The wait for the first bytes has no end of its own here: a program that pauses before
//! it speaks is checked all the same (the relay connects meanwhile, for server-first
//! protocols, but forwards nothing the program sent until it is checked).

/// Ports where a connection must claim its host (TLS with SNI, or HTTP).
pub const WEB_PORTS: [u16; 2] = [80, 443];
/// Longest request head, or undecided start, held back.
const MAX_HEAD: usize = 16 * 1024;
/// Longest chunk-size line.
const MAX_CHUNK_LINE: usize = 1024;

#[derive(Debug)]
enum State {
    /// Nothing decided yet: the bytes so far are held.
    Start,
    /// Plain HTTP/1, waiting for (the rest of) a request head.
    Head,
    /// Inside a request body of this many more bytes.
    Body(u64),
    /// Inside a chunked body.
    Chunked(Chunk),
    /// Checked and no longer inspectable (TLS after its hello, an upgraded or opaque stream).
    Pass,
}

#[derive(Debug)]
enum Chunk {
    /// Reading a size line (the bytes so far).
    Size(Vec<u8>),
    /// Inside a chunk's data, then its CRLF (`crlf` bytes of it still to come).
    Data { left: u64, crlf: u8 },
    /// After the last chunk: trailer lines until an empty one (the current line so far).
    Trailer(Vec<u8>),
}

/// One connection's inspector (the program's direction).
#[derive(Debug)]
pub struct Inspector {
    name: String,
    port: u16,
    state: State,
    /// Bytes held back: an undecided start or an incomplete head.
    held: Vec<u8>,
    /// Whether the connection turned out to be plain HTTP (a refusal can answer 403).
    pub http: bool,
}

impl Inspector {
    pub fn new(name: &str, port: u16) -> Self {
        Inspector {
            name: name.to_owned(),
            port,
            state: State::Start,
            held: Vec::new(),
            http: false,
        }
    }

    /// Takes bytes the program sent; returns the bytes now cleared to go out (maybe none,
    /// while a start or a head is incomplete), or why the connection is refused.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        let mut input = bytes;
        while !input.is_empty() {
            input = match &mut self.state {
                State::Pass => {
                    out.extend_from_slice(input);
                    &[]
                }
                State::Start => {
                    self.held.extend_from_slice(input);
                    self.start()?;
                    match self.state {
                        // Re-read what was held in the state now known.
                        State::Start => &[],
                        _ => {
                            let held = std::mem::take(&mut self.held);
                            out.extend(self.feed(&held)?);
                            &[]
                        }
                    }
                }
                State::Head => {
                    let before = self.held.len();
                    self.held.extend_from_slice(input);
                    // Empty lines before a request are not its end (see `start`).
                    let skipped = self
                        .held
                        .iter()
                        .position(|b| !matches!(b, b'\r' | b'\n'))
                        .unwrap_or(self.held.len());
                    let end = find(&self.held[skipped..], b"\r\n\r\n").map(|end| skipped + end);
                    match end {
                        None if self.held.len() > MAX_HEAD => {
                            return Err(format!("sent a request head over {MAX_HEAD} bytes"))
                        }
                        None => &[],
                        Some(end) => {
                            let head_len = end + 4;
                            let used = head_len - before;
                            let head: Vec<u8> = self.held.drain(..).take(head_len).collect();
                            self.held.clear();
                            self.state = self.request(&head)?;
                            out.extend_from_slice(&head);
                            &input[used..]
                        }
                    }
                }
                State::Body(left) => {
                    let n = (*left).min(input.len() as u64) as usize;
                    *left -= n as u64;
                    out.extend_from_slice(&input[..n]);
                    if *left == 0 {
                        self.state = State::Head;
                    }
                    &input[n..]
                }
                State::Chunked(chunk) => {
                    let (used, done) = chunked(chunk, input)?;
                    out.extend_from_slice(&input[..used]);
                    if done {
                        self.state = State::Head;
                    }
                    &input[used..]
                }
            };
        }
        Ok(out)
    }

    /// Decides what the held start is, once it can be told.
    fn start(&mut self) -> Result<(), String> {
        let web = WEB_PORTS.contains(&self.port);
        // Servers skip empty lines before a request (RFC 9112 §2.2): so does the check.
        let skipped = self
            .held
            .iter()
            .position(|b| !matches!(b, b'\r' | b'\n'))
            .unwrap_or(self.held.len());
        let rest = &self.held[skipped..];
        if rest.is_empty() {
            return match self.held.len() > MAX_HEAD {
                true => Err("sent only empty lines".into()),
                false => Ok(()),
            };
        }
        if rest[0] == 0x16 {
            return match client_hello_name(rest) {
                Hello::More if rest.len() <= MAX_HEAD => Ok(()),
                Hello::Name(Some(claimed)) if claimed == self.name => {
                    self.state = State::Pass;
                    Ok(())
                }
                Hello::Name(Some(claimed)) => {
                    Err(format!("the connection names {claimed}, not {}", self.name))
                }
                Hello::Name(None) if !web => {
                    self.state = State::Pass;
                    Ok(())
                }
                Hello::Name(None) => Err("a TLS connection without a server name".into()),
                Hello::More | Hello::Broken => Err("an unreadable TLS start".into()),
            };
        }
        let Some(line_end) = rest.iter().position(|b| *b == b'\n') else {
            // A start that may still become a request line is held (at most MAX_HEAD); one
            // that cannot is another protocol.
            return match (looks_like_request(rest), web) {
                (true, _) if self.held.len() > MAX_HEAD => {
                    Err(format!("sent a request line over {MAX_HEAD} bytes"))
                }
                (true, _) => Ok(()),
                (false, true) => Err("neither TLS nor HTTP, on a web port".into()),
                (false, false) => {
                    self.state = State::Pass;
                    Ok(())
                }
            };
        };
        let line = rest[..line_end]
            .strip_suffix(b"\r")
            .unwrap_or(&rest[..line_end]);
        if is_request_line(line)
            || looks_like_request(line) && line.windows(5).any(|w| w == b"HTTP/")
        {
            self.http = true;
            self.state = State::Head;
        } else if web {
            return Err("neither TLS nor HTTP, on a web port".into());
        } else {
            self.state = State::Pass;
        }
        Ok(())
    }

    /// Checks one request head; the state its body puts the connection in.
    fn request(&self, head: &[u8]) -> Result<State, String> {
        let skipped = head
            .iter()
            .position(|b| !matches!(b, b'\r' | b'\n'))
            .unwrap_or(head.len());
        let head = &head[skipped..];
        if head.starts_with(b"PRI * HTTP/2") {
            return Err("spoke HTTP/2 in clear text, which cannot be checked".into());
        }
        // A line ended by a bare LF may end a head for the server where it does not here:
        // refused, so that what is checked is exactly what the server reads.
        let bare_lf = head
            .iter()
            .enumerate()
            .any(|(i, b)| *b == b'\n' && (i == 0 || head[i - 1] != b'\r'));
        if bare_lf {
            return Err("sent a line ended by a bare LF".into());
        }
        let mut headers = [httparse::EMPTY_HEADER; 128];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(head) {
            Ok(httparse::Status::Complete(read)) if read == head.len() => {}
            _ => return Err("sent a request that cannot be read".into()),
        }
        let method = request.method.unwrap_or_default();
        let target = request.path.unwrap_or_default();
        if method.eq_ignore_ascii_case("CONNECT") {
            return Err("asked to CONNECT through it".into());
        }
        let value = |name: &str| {
            request
                .headers
                .iter()
                .filter(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| String::from_utf8_lossy(h.value).trim().to_ascii_lowercase())
                .collect::<Vec<_>>()
        };
        let hosts = value("host");
        let [host] = hosts.as_slice() else {
            return Err(match hosts.len() {
                0 => "sent a request without a Host".into(),
                _ => "sent a request with two Host headers".into(),
            });
        };
        let host = without_port(host);
        if host != self.name {
            return Err(format!("the connection names {host}, not {}", self.name));
        }
        // The target is a path, `*` (OPTIONS), or an absolute URI whose authority is the name
        // too (servers take the target's authority over the Host).
        if !target.starts_with('/') {
            match target.split_once("://") {
                _ if target == "*" && method == "OPTIONS" => {}
                Some((scheme, rest))
                    if scheme
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
                {
                    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
                    let authority = authority.rsplit('@').next().unwrap_or_default();
                    let named = without_port(&authority.to_ascii_lowercase());
                    if named != self.name {
                        return Err(format!("the connection names {named}, not {}", self.name));
                    }
                }
                _ => return Err("sent a request whose target is not a path".into()),
            }
        }
        let upgrade = value("upgrade").join(",");
        if upgrade.contains("h2c") {
            return Err(
                "asked to upgrade to h2c (HTTP/2 in clear text), which cannot be checked".into(),
            );
        }
        // After an upgrade nothing more of the stream is HTTP, and a server that declines one
        // goes on reading requests: neither can be checked here (over TLS, wss:// works).
        if !upgrade.is_empty() {
            return Err(format!(
                "asked to upgrade plain HTTP to {upgrade}, which cannot be checked (use TLS)"
            ));
        }
        let chunked = value("transfer-encoding")
            .iter()
            .any(|v| v.split(',').any(|c| c.trim() == "chunked"));
        let lengths = value("content-length");
        if chunked && !lengths.is_empty() || lengths.len() > 1 {
            return Err("framed a request body two ways".into());
        }
        if chunked {
            return Ok(State::Chunked(Chunk::Size(Vec::new())));
        }
        match lengths.first() {
            None => Ok(State::Head),
            Some(length) => match length.parse::<u64>() {
                Ok(0) => Ok(State::Head),
                Ok(n) => Ok(State::Body(n)),
                Err(_) => Err("sent a request with an unreadable Content-Length".into()),
            },
        }
    }
}

/// Reads a chunked body: how many bytes of `input` it used, and whether the body ended.
fn chunked(chunk: &mut Chunk, input: &[u8]) -> Result<(usize, bool), String> {
    let mut used = 0;
    while used < input.len() {
        match chunk {
            Chunk::Size(line) => {
                let byte = input[used];
                used += 1;
                line.push(byte);
                if line.len() > MAX_CHUNK_LINE {
                    return Err("sent a chunk size line that never ends".into());
                }
                if line.ends_with(b"\r\n") {
                    let text = String::from_utf8_lossy(&line[..line.len() - 2]).into_owned();
                    let size = text.split(';').next().unwrap_or_default().trim();
                    let size = u64::from_str_radix(size, 16)
                        .map_err(|_| "sent an unreadable chunk size".to_owned())?;
                    *chunk = match size {
                        0 => Chunk::Trailer(Vec::new()),
                        n => Chunk::Data { left: n, crlf: 2 },
                    };
                }
            }
            Chunk::Data { left, crlf } => {
                if *left > 0 {
                    let n = (*left).min((input.len() - used) as u64);
                    *left -= n;
                    used += n as usize;
                } else {
                    let expected = if *crlf == 2 { b'\r' } else { b'\n' };
                    if input[used] != expected {
                        return Err("sent a chunk that does not end where it said".into());
                    }
                    used += 1;
                    *crlf -= 1;
                    if *crlf == 0 {
                        *chunk = Chunk::Size(Vec::new());
                    }
                }
            }
            Chunk::Trailer(line) => {
                let byte = input[used];
                used += 1;
                line.push(byte);
                if line.len() > MAX_HEAD {
                    return Err("sent trailers that never end".into());
                }
                if line.ends_with(b"\r\n") {
                    if line.len() == 2 {
                        return Ok((used, true));
                    }
                    line.clear();
                }
            }
        }
    }
    Ok((used, false))
}

enum Hello {
    More,
    Name(Option<String>),
    Broken,
}

fn client_hello_name(bytes: &[u8]) -> Hello {
    let mut acceptor = rustls::server::Acceptor::default();
    let mut reader = bytes;
    if acceptor.read_tls(&mut reader).is_err() {
        return Hello::Broken;
    }
    match acceptor.accept() {
        Ok(Some(accepted)) => Hello::Name(
            accepted
                .client_hello()
                .server_name()
                .map(|n| n.to_ascii_lowercase()),
        ),
        Ok(None) => Hello::More,
        Err(_) => Hello::Broken,
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// An HTTP method token: RFC 9110's `tchar`s.
fn is_token(bytes: &[u8]) -> bool {
    !bytes.is_empty()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(b))
}

/// Whether a (possibly incomplete) first line can still become a request line.
fn looks_like_request(start: &[u8]) -> bool {
    match start.iter().position(|b| *b == b' ') {
        None => start.len() < 32 && is_token(start) || start.is_empty(),
        Some(space) => is_token(&start[..space]),
    }
}

/// `METHOD SP target SP HTTP/x.y`, any token as the method (`get`, `PROPFIND` alike).
fn is_request_line(line: &[u8]) -> bool {
    let text = String::from_utf8_lossy(line);
    let parts: Vec<&str> = text.split(' ').collect();
    matches!(parts.as_slice(), [method, target, version]
        if is_token(method.as_bytes()) && !target.is_empty() && version.starts_with("HTTP/"))
}

/// A Host header's host: `name:8080` is `name`, `[::1]:80` is `[::1]`.
pub fn without_port(host: &str) -> String {
    match host.rsplit_once(':') {
        Some((name, port))
            if !port.is_empty()
                && port.chars().all(|c| c.is_ascii_digit())
                && (!name.contains(':') || name.ends_with(']')) =>
        {
            name.trim_end_matches('.').to_owned()
        }
        _ => host.trim_end_matches('.').to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(port: u16, parts: &[&[u8]]) -> Result<Vec<u8>, String> {
        let mut inspector = Inspector::new("files.test", port);
        let mut out = Vec::new();
        for part in parts {
            out.extend(inspector.feed(part)?);
        }
        Ok(out)
    }

    #[test]
    fn every_request_on_a_kept_alive_connection_must_name_the_host() {
        let first = b"GET /1 HTTP/1.1\r\nHost: files.test\r\n\r\n";
        let ok = run(
            80,
            &[
                first,
                b"POST /2 HTTP/1.1\r\nHost: Files.Test:80\r\ncontent-length: 5\r\n\r\nhello",
            ],
        );
        assert!(ok.is_ok(), "{ok:?}");
        let pipelined = [
            &b"GET /1 HTTP/1.1\r\nHost: files.test\r\n\r\nGET /2 HTTP/1.1\r\nHost: evil.test\r\n\r\n"[..],
        ];
        assert_eq!(
            run(80, &pipelined).unwrap_err(),
            "the connection names evil.test, not files.test"
        );
        // A body that hides a request is read as a body; the request after it is checked.
        let smuggled = b"POST / HTTP/1.1\r\nHost: files.test\r\ncontent-length: 39\r\n\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\nxxxxxGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n";
        assert!(run(80, &[smuggled]).unwrap_err().contains("evil.test"));
        let chunked = b"POST / HTTP/1.1\r\nHost: files.test\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n";
        assert!(run(80, &[chunked]).unwrap_err().contains("evil.test"));
    }

    #[test]
    fn every_way_round_the_first_check_is_refused() {
        for (bytes, why) in [
            (&b"PROPFIND / HTTP/1.1\r\nHost: evil.test\r\n\r\n"[..], "names evil.test"),
            (b"get / HTTP/1.1\r\nHost: evil.test\r\n\r\n", "names evil.test"),
            (b"GET / HTTP/1.1\r\nHost: files.test\r\nHost: evil.test\r\n\r\n", "two Host"),
            (b"GET http://evil.test/ HTTP/1.1\r\nHost: files.test\r\n\r\n", "names evil.test"),
            (b"GET / HTTP/1.0\r\n\r\n", "without a Host"),
            (b"CONNECT evil.test:443 HTTP/1.1\r\nHost: files.test\r\n\r\n", "CONNECT"),
            (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "HTTP/2"),
            (b"GET / HTTP/1.1\r\nHost: files.test\r\nUpgrade: h2c\r\nConnection: upgrade\r\n\r\n", "h2c"),
            (b"POST / HTTP/1.1\r\nHost: files.test\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n", "two ways"),
            (b"\x00\x01binary", "neither TLS nor HTTP"),
            (b"GET / HTTP/1.1\r\nHost: files.test\n\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n", "bare LF"),
            (b"GET HTTP://evil.test/ HTTP/1.1\r\nHost: files.test\r\n\r\n", "names evil.test"),
            (b"GET ftp://evil.test/ HTTP/1.1\r\nHost: files.test\r\n\r\n", "names evil.test"),
            (b"GET evil.test:80 HTTP/1.1\r\nHost: files.test\r\n\r\n", "not a path"),
            (b"GET / HTTP/1.1\r\nHost: files.test\r\nUpgrade: websocket\r\n\r\n", "upgrade plain HTTP"),
            (b"\r\n\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n", "names evil.test"),
        ] {
            let got = run(443, &[bytes]).unwrap_err();
            assert!(got.contains(why), "{:?}: {got}", String::from_utf8_lossy(bytes));
        }
    }

    #[test]
    fn a_request_line_never_grows_past_the_check() {
        // A start that may still be a request line is held, never waved through, on any port.
        for port in [80, 8080] {
            let mut inspector = Inspector::new("files.test", port);
            let mut long = b"GET /".to_vec();
            long.extend(std::iter::repeat_n(b'a', MAX_HEAD + 10));
            assert!(
                inspector.feed(&long).unwrap_err().contains("over"),
                "{port}"
            );
        }
        // Empty lines before a request on another port are still HTTP.
        let crlf = run(8080, &[b"\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n"]);
        assert!(crlf.unwrap_err().contains("evil.test"));
    }

    #[test]
    fn bytes_are_held_until_their_request_is_checked() {
        let mut inspector = Inspector::new("files.test", 8080);
        assert_eq!(inspector.feed(b"GET / HT").unwrap(), b"");
        assert_eq!(inspector.feed(b"TP/1.1\r\nHost: files").unwrap(), b"");
        let out = inspector.feed(b".test\r\n\r\n").unwrap();
        assert_eq!(out, b"GET / HTTP/1.1\r\nHost: files.test\r\n\r\n");
        assert!(inspector.http);
        // Another protocol on another port passes; on a web port it is refused.
        let mut other = Inspector::new("db.test", 5432);
        assert_eq!(
            other
                .feed(b"\x00\x00\x00\x08\x04\xd2\x16\x2f")
                .unwrap()
                .len(),
            8
        );
        assert_eq!(without_port("[::1]:80"), "[::1]");
        assert_eq!(without_port("a.test."), "a.test");
    }
}
