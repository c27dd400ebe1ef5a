//! The package lists of an environment as an admin types them, parsed into the only shapes a
//! build passes on: `name[extras] specifier ; marker` for pip, `name@range` for npm. Nothing
//! else reaches pip or npm: no option (no token may start with `-`), no `$` (pip expands
//! `${VAR}` in requirement files), no URL and no path.

/// Longest requirements text or npm list accepted, in bytes.
pub const MAX_SPEC_BYTES: usize = 16 * 1024;

/// PEP 508 marker variables, the only words a marker may use besides its operators.
const MARKER_WORDS: &[&str] = &[
    "python_version",
    "python_full_version",
    "os_name",
    "sys_platform",
    "platform_release",
    "platform_system",
    "platform_version",
    "platform_machine",
    "platform_python_implementation",
    "implementation_name",
    "implementation_version",
    "extra",
    "and",
    "or",
    "in",
    "not",
];

/// What is never accepted anywhere in a line, with the reason shown.
fn forbidden(line: &str) -> Option<&'static str> {
    if line.contains('$') {
        return Some("'$' is not accepted (pip would read it as a variable of its environment)");
    }
    if line.split_whitespace().any(|token| token.starts_with('-')) {
        return Some("pip options are not accepted here; the package index is a setting");
    }
    if line.contains("://") || line.contains(['/', '\\', '@']) {
        return Some("URLs and paths are not accepted; name a package from the index");
    }
    None
}

fn is_name(text: &str) -> bool {
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 128
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// `==1.2`, `>=2,<3`, `~= 1.4.2`: comma-separated clauses, each an operator and a version.
fn specifier(text: &str) -> Result<String, &'static str> {
    const OPERATORS: [&str; 8] = ["===", "==", "!=", "<=", ">=", "~=", "<", ">"];
    let mut clauses = Vec::new();
    for clause in text.split(',') {
        let clause = clause.trim();
        let Some(op) = OPERATORS.iter().find(|op| clause.starts_with(**op)) else {
            return Err("expected a version specifier such as ==1.2 or >=2 after the name");
        };
        let version = clause[op.len()..].trim();
        let version_ok = !version.is_empty()
            && version.len() <= 64
            && !version.starts_with(['-', '.'])
            && version.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '.' | '*' | '+' | '!' | '_' | '-')
            });
        if !version_ok {
            return Err("a version is letters, digits and . * + ! _ - (as in ==1.2.3)");
        }
        clauses.push(format!("{op}{version}"));
    }
    Ok(clauses.join(","))
}

/// A PEP 508 environment marker: marker words, comparison operators, parentheses and quoted
/// values of plain characters.
fn marker(text: &str) -> Result<String, &'static str> {
    let bad = Err("a marker reads like python_version >= \"3.9\" (PEP 508)");
    let mut rest = text.trim();
    if rest.is_empty() {
        return bad;
    }
    while !rest.is_empty() {
        let first = rest.chars().next().unwrap_or(' ');
        let taken = if first.is_whitespace() || matches!(first, '(' | ')') {
            first.len_utf8()
        } else if matches!(first, '<' | '>' | '=' | '!' | '~') {
            rest.find(|c: char| !matches!(c, '<' | '>' | '=' | '!' | '~'))
                .unwrap_or(rest.len())
        } else if matches!(first, '"' | '\'') {
            let Some(end) = rest[1..].find(first) else {
                return bad;
            };
            let value = &rest[1..1 + end];
            let value_ok = !value.starts_with('-')
                && value.chars().all(|c| {
                    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ' ' | '+' | '*' | '-')
                });
            if !value_ok {
                return bad;
            }
            end + 2
        } else {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
                .unwrap_or(rest.len());
            if end == 0 || !MARKER_WORDS.contains(&&rest[..end]) {
                return bad;
            }
            end
        };
        rest = &rest[taken..];
    }
    Ok(text.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// One requirement line, parsed into the form written to `requirements.txt`.
fn requirement(line: &str) -> Result<String, &'static str> {
    if let Some(why) = forbidden(line) {
        return Err(why);
    }
    let (head, marker_text) = match line.split_once(';') {
        Some((head, marker_text)) => (head, Some(marker_text)),
        None => (line, None),
    };
    let head = head.trim();
    let name_end = head
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(head.len());
    let name = &head[..name_end];
    if !is_name(name) {
        return Err("a requirement starts with a package name");
    }
    let mut rest = head[name_end..].trim_start();
    let mut out = name.to_owned();
    if let Some(after) = rest.strip_prefix('[') {
        let Some((extras, after)) = after.split_once(']') else {
            return Err("extras read [extra1,extra2]");
        };
        let extras: Vec<&str> = extras.split(',').map(str::trim).collect();
        if !extras.iter().all(|extra| is_name(extra)) {
            return Err("extras read [extra1,extra2]");
        }
        out.push_str(&format!("[{}]", extras.join(",")));
        rest = after.trim_start();
    }
    if !rest.is_empty() {
        out.push_str(&specifier(rest)?);
    }
    if let Some(text) = marker_text {
        out.push_str(&format!("; {}", marker(text)?));
    }
    Ok(out)
}

/// One requirement per line, pip syntax (`pandas`, `numpy>=2,<3`, `requests[socks]==2.32.3`,
/// `tzdata; python_version >= "3.9"`); `#` starts a comment. Returns each requirement in the
/// one form a build writes to `requirements.txt`; a line with anything else (an option, a
/// variable, a URL or a path) is refused with its number.
pub fn parse_requirements(text: &str) -> Result<Vec<String>, String> {
    if text.len() > MAX_SPEC_BYTES {
        return Err(format!(
            "Keep the requirements under {} KiB.",
            MAX_SPEC_BYTES / 1024
        ));
    }
    let mut out = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        match requirement(line) {
            Ok(parsed) => out.push(parsed),
            Err(why) => return Err(format!("Line {}: {why} ({line})", number + 1)),
        }
    }
    Ok(out)
}

/// One npm package: `axios`, `axios@1.7.9`, `lodash@^4`, `@scope/name@2`.
fn npm_item(item: &str) -> Result<String, String> {
    let name_ok = |s: &str| {
        !s.is_empty()
            && s.len() <= 214
            && s.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && s.chars().all(|c| {
                c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.' | '_')
            })
    };
    if item.contains('$') || item.starts_with('-') {
        return Err(format!(
            "{item}: npm options and variables are not accepted; name a package"
        ));
    }
    let (scope, rest) = match item.strip_prefix('@') {
        Some(rest) => match rest.split_once('/') {
            Some((scope, rest)) => (Some(scope), rest),
            None => return Err(format!("{item}: a scoped package reads @scope/name")),
        },
        None => (None, item),
    };
    let (name, version) = match rest.split_once('@') {
        Some((name, version)) => (name, Some(version)),
        None => (rest, None),
    };
    if !name_ok(name) || scope.is_some_and(|s| !name_ok(s)) {
        return Err(format!(
            "{item}: npm names are lowercase letters, digits, '-', '.' and '_', starting with a letter or digit"
        ));
    }
    if let Some(version) = version {
        let version_ok = !version.is_empty()
            && !version.starts_with('-')
            && version.chars().all(|c| {
                c.is_ascii_alphanumeric()
                    || matches!(c, '.' | '-' | '+' | '^' | '~' | '<' | '>' | '=' | '*')
            });
        if !version_ok {
            return Err(format!(
                "{item}: give a version or range (axios@1.7.9, lodash@^4); URLs and paths are not accepted"
            ));
        }
    }
    Ok(item.to_owned())
}

/// npm packages, one per line or separated by spaces; `#` starts a comment. Git URLs,
/// tarballs, paths, aliases and options are refused.
pub fn parse_npm(text: &str) -> Result<Vec<String>, String> {
    if text.len() > MAX_SPEC_BYTES {
        return Err(format!(
            "Keep the npm list under {} KiB.",
            MAX_SPEC_BYTES / 1024
        ));
    }
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or_default();
        for item in line.split_whitespace() {
            out.push(npm_item(item)?);
        }
    }
    Ok(out)
}

/// The name an npm spec asks for (`@scope/name@2` → `@scope/name`).
pub fn npm_name(spec: &str) -> &str {
    let skip = usize::from(spec.starts_with('@'));
    match spec[skip..].find('@') {
        Some(at) => &spec[..skip + at],
        None => spec,
    }
}

/// The project name a requirement asks for, normalized as PyPI does (`Foo_Bar` → `foo-bar`).
pub fn requirement_name(line: &str) -> String {
    let end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .unwrap_or(line.len());
    normalize(&line[..end])
}

/// PEP 503 normalization.
pub fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut dash = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            dash = true;
        } else {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_come_back_in_one_parsed_form() {
        let ok = parse_requirements(
            "# charts\nnumpy >= 2 , < 3\n\npandas  # data\nrequests[socks]==2.32.3\ntzdata ;python_version>=\"3.9\"\n",
        )
        .unwrap();

        assert_eq!(
            ok,
            [
                "numpy>=2,<3",
                "pandas",
                "requests[socks]==2.32.3",
                "tzdata; python_version>=\"3.9\""
            ]
        );
    }

    #[test]
    fn options_variables_urls_and_paths_are_refused_anywhere_in_a_line() {
        // Every shape the 2026-12-06 probe got through, and the ones it saw refused.
        for line in [
            "evilpkg>=0 --no-binary=:all:",
            "pkg>=1 --hash=sha256:00",
            "pkg>=1 -r /etc/passwd",
            "pkg>=1 --global-option=--x",
            "pkg>=1 --config-settings=x=y",
            "pkg==${HOME}",
            "iniconfig==${SANDBOX_CONSOLE_SECRET_KEY}",
            "iniconfig>=0,!=${R2_CANARY_TOKEN}",
            "pkg; rm -rf /",
            "pkg; os_name == \"posix\" --no-binary=:all:",
            "-e .",
            "--index-url https://evil.example/simple",
            "git+https://x.example/y",
            "./local",
            "/abs/path",
            "../up",
            "pkg @ file:///etc/passwd",
            "pkg[x]@ file:///tmp",
            "evilpkg[x]@file:/path",
            "numpy lol",
            "pkg==1 pkg2",
            "pkg>=1,</textarea><script>alert(1)</script>",
            "tinypkg>=1,</textarea><meta http-equiv=refresh content=\"3;url=//127.0.0.1:1/x\">",
            "pkg; python_version >= \"-3\"",
            "pkg; evil_word == \"x\"",
            "pkg==-1",
        ] {
            assert!(parse_requirements(line).is_err(), "accepted: {line}");
        }
        assert!(parse_requirements("numpy\n--no-binary=:all:")
            .unwrap_err()
            .starts_with("Line 2: pip options"));
        assert!(parse_requirements("pkg==${HOME}")
            .unwrap_err()
            .contains("'$' is not accepted"));
        assert!(parse_requirements("numpy\nfoo @ https://x.example/foo.whl")
            .unwrap_err()
            .starts_with("Line 2: URLs"));
    }

    #[test]
    fn npm_specs_take_names_versions_and_scopes_only() {
        let ok = parse_npm("axios@1.7.9 lodash@^4\n@types/node  # types\n").unwrap();

        assert_eq!(ok, ["axios@1.7.9", "lodash@^4", "@types/node"]);
        assert_eq!(npm_name("@types/node@20"), "@types/node");
        assert_eq!(npm_name("axios"), "axios");
        for item in [
            "git+https://github.com/x/y",
            "Axios",
            "@scope",
            "--no-ignore-scripts",
            "evil-postinstall --no-ignore-scripts",
            "-g",
            "--foreground-scripts",
            "--registry",
            "file:../x",
            "../x",
            "a@file:x",
            "x@http://evil",
            "x@-1",
            "x@${HOME}",
            "@-x/y",
            "npm:alias@1",
        ] {
            assert!(parse_npm(item).is_err(), "accepted: {item}");
        }
    }

    #[test]
    fn names_are_normalized_as_pypi_does() {
        assert_eq!(normalize("Foo__Bar.baz"), "foo-bar-baz");
        assert_eq!(requirement_name("Pandas<3"), "pandas");
    }
}
