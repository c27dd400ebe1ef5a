//! The house rules a path promises, read from the source itself (parsed with `syn`):
//! - no import circle in `src/server`: in every folder, the files and subfolders that refer
//!   to each other form no cycle (a folder's `mod.rs` is its face: references to it, or from
//!   it down to its own parts, are not edges);
//! - only the doors (`server/routes/`) and the host around them (`startup`, `serve`, `state`)
//!   touch axum, and no service refers to `AppState`;
//! - providers never touch axum or leptos; the UI never touches bollard, sqlx or reqwest;
//! - one idea per file: no file under `src/` is over 600 lines (inline tests count: a long
//!   test module goes to a file of its own).

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use syn::visit::Visit;

/// A module path, `["crate", "server", "routes", "api"]`.
type ModPath = Vec<String>;

struct SourceFile {
    /// As written under `src/`, for messages.
    name: String,
    module: ModPath,
    /// Every path the file refers to through `crate`, `super`, `self` or a child module,
    /// made absolute; and every external crate path (`axum::…`) as written.
    refs: BTreeSet<ModPath>,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn module_of(src: &Path, file: &Path) -> ModPath {
    let relative = file.strip_prefix(src).unwrap();
    let mut module = vec!["crate".to_owned()];
    for part in relative.iter() {
        let part = part.to_string_lossy();
        match part.strip_suffix(".rs") {
            Some("mod" | "lib" | "main") => {}
            Some(name) => module.push(name.to_owned()),
            None => module.push(part.into_owned()),
        }
    }
    module
}

/// Collects the paths one file refers to, resolving `super`/`self` against the module the
/// code sits in (inline `mod tests { … }` included).
struct Refs<'a> {
    /// The module each `mod` level of the file is in: the file's own, then inline ones.
    stack: Vec<ModPath>,
    /// Names of the file's own submodules (`mod x;` or `mod x { … }`), per stack level.
    children: Vec<BTreeSet<String>>,
    known: &'a BTreeSet<ModPath>,
    out: BTreeSet<ModPath>,
}

impl Refs<'_> {
    fn resolve(&mut self, segments: &[String]) {
        let Some(first) = segments.first() else {
            return;
        };
        let here = self.stack.last().unwrap().clone();
        let mut absolute = match first.as_str() {
            "crate" => segments.to_vec(),
            "self" => [here.clone(), segments[1..].to_vec()].concat(),
            "super" => {
                let mut base = here.clone();
                let mut rest = segments;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop();
                    rest = &rest[1..];
                }
                [base, rest.to_vec()].concat()
            }
            name if self.children.last().unwrap().contains(name) => {
                [here.clone(), segments.to_vec()].concat()
            }
            name if self
                .known
                .contains(&[here.clone(), vec![name.to_owned()]].concat()) =>
            {
                [here.clone(), segments.to_vec()].concat()
            }
            // An external crate (or a local item): kept as written.
            _ => segments.to_vec(),
        };
        absolute.retain(|s| s != "*");
        self.out.insert(absolute);
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(path) => {
                prefix.push(path.ident.to_string());
                self.use_tree(prefix, &path.tree);
                prefix.pop();
            }
            syn::UseTree::Name(name) => {
                let mut full = prefix.clone();
                if name.ident != "self" {
                    full.push(name.ident.to_string());
                }
                self.resolve(&full);
            }
            syn::UseTree::Rename(rename) => {
                let mut full = prefix.clone();
                if rename.ident != "self" {
                    full.push(rename.ident.to_string());
                }
                self.resolve(&full);
            }
            syn::UseTree::Glob(_) => {
                let full = prefix.clone();
                self.resolve(&full);
            }
            syn::UseTree::Group(group) => {
                for item in &group.items {
                    self.use_tree(prefix, item);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Refs<'_> {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &item.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 {
            self.resolve(&segments);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        // Paths inside macro bodies (`tracing::…!`, `json!`) are tokens; those that matter
        // here (`crate::…`, `axum::…`) are read from the tokens as text.
        let text = mac.tokens.to_string().replace(' ', "");
        for start in [
            "crate::",
            "axum::",
            "leptos::",
            "bollard::",
            "sqlx::",
            "reqwest::",
        ] {
            for (at, _) in text.match_indices(start) {
                let path: String = text[at..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                let segments: Vec<String> = path
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect();
                self.resolve(&segments);
            }
        }
        syn::visit::visit_macro(self, mac);
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        self.children
            .last_mut()
            .unwrap()
            .insert(item.ident.to_string());
        if let Some((_, items)) = &item.content {
            let mut inner = self.stack.last().unwrap().clone();
            inner.push(item.ident.to_string());
            self.stack.push(inner);
            self.children.push(BTreeSet::new());
            for item in items {
                self.visit_item(item);
            }
            self.children.pop();
            self.stack.pop();
        }
    }
}

/// Every file under `src/`, parsed once for all the tests here.
/// The most lines a file under `src/` may have.
const MAX_LINES: usize = 600;

/// Files under `src/` longer than [`MAX_LINES`], with their lengths.
fn overlong_files(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut long: Vec<String> = files
        .iter()
        .filter_map(|file| {
            let lines = std::fs::read_to_string(file).unwrap().lines().count();
            (lines > MAX_LINES).then(|| format!("{} ({lines} lines)", file.display()))
        })
        .collect();
    long.sort();
    long
}

#[test]
fn no_file_under_src_is_over_600_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    assert_eq!(
        overlong_files(&src),
        Vec::<String>::new(),
        "split these into files of one idea each"
    );
}

#[test]
fn the_length_check_sees_a_long_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("short.rs"), "fn a() {}\n".repeat(MAX_LINES)).unwrap();
    std::fs::write(
        dir.path().join("long.rs"),
        "fn a() {}\n".repeat(MAX_LINES + 1),
    )
    .unwrap();
    let long = overlong_files(dir.path());
    assert_eq!(long.len(), 1, "{long:?}");
    assert!(long[0].ends_with("long.rs (601 lines)"), "{long:?}");
}

fn read_sources() -> &'static [SourceFile] {
    static SOURCES: std::sync::OnceLock<Vec<SourceFile>> = std::sync::OnceLock::new();
    SOURCES.get_or_init(parse_sources)
}

fn parse_sources() -> Vec<SourceFile> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let known: BTreeSet<ModPath> = files.iter().map(|f| module_of(&src, f)).collect();
    files
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            let ast = syn::parse_file(&text)
                .unwrap_or_else(|e| panic!("{} does not parse: {e}", file.display()));
            let module = module_of(&src, file);
            // `mod.rs` sits in its folder's module; any other file is a module of its own,
            // whose `super` is its folder.
            let mut refs = Refs {
                stack: vec![module.clone()],
                children: vec![BTreeSet::new()],
                known: &known,
                out: BTreeSet::new(),
            };
            refs.visit_file(&ast);
            SourceFile {
                name: file.strip_prefix(&src).unwrap().display().to_string(),
                module,
                refs: refs.out,
            }
        })
        .collect()
}

fn starts_with(path: &[String], prefix: &[&str]) -> bool {
    path.len() >= prefix.len() && path.iter().zip(prefix).all(|(a, b)| a == b)
}

fn touches(file: &SourceFile, krate: &str) -> Option<String> {
    file.refs
        .iter()
        .find(|r| r.first().is_some_and(|s| s == krate))
        .map(|r| r.join("::"))
}

/// Cycles among the parts of each folder under `root`: returns each as `folder: a -> b -> a`.
fn cycles(files: &[SourceFile], root: &[&str]) -> Vec<String> {
    let modules: BTreeSet<ModPath> = files.iter().map(|f| f.module.clone()).collect();
    // folder -> part -> parts it refers to
    let mut graphs: BTreeMap<ModPath, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in files.iter().filter(|f| starts_with(&f.module, root)) {
        for target in &file.refs {
            if !starts_with(target, root) {
                continue;
            }
            // The module the reference lands in: its longest known prefix.
            let Some(landing) = (1..=target.len())
                .rev()
                .map(|n| target[..n].to_vec())
                .find(|m| modules.contains(m))
            else {
                continue;
            };
            let common = file
                .module
                .iter()
                .zip(&landing)
                .take_while(|(a, b)| a == b)
                .count();
            // A reference to an ancestor's own items, or from a folder's face down into
            // its own parts, is no edge.
            if common == landing.len() || common == file.module.len() {
                continue;
            }
            let folder = file.module[..common].to_vec();
            graphs
                .entry(folder)
                .or_default()
                .entry(file.module[common].clone())
                .or_default()
                .insert(landing[common].clone());
        }
    }
    let mut found = Vec::new();
    for (folder, graph) in &graphs {
        // Depth-first search for a back edge.
        fn visit(
            node: &str,
            graph: &BTreeMap<String, BTreeSet<String>>,
            path: &mut Vec<String>,
            done: &mut BTreeSet<String>,
            found: &mut Vec<Vec<String>>,
        ) {
            if let Some(at) = path.iter().position(|p| p == node) {
                let mut cycle = path[at..].to_vec();
                cycle.push(node.to_owned());
                found.push(cycle);
                return;
            }
            if !done.insert(node.to_owned()) {
                return;
            }
            path.push(node.to_owned());
            for next in graph.get(node).into_iter().flatten() {
                visit(next, graph, path, done, found);
            }
            path.pop();
        }
        let mut done = BTreeSet::new();
        let mut in_folder = Vec::new();
        for node in graph.keys() {
            visit(node, graph, &mut Vec::new(), &mut done, &mut in_folder);
        }
        for cycle in in_folder {
            found.push(format!("{}: {}", folder.join("::"), cycle.join(" -> ")));
        }
    }
    found
}

#[test]
fn nothing_in_the_server_imports_in_a_circle() {
    let files = read_sources();
    let server = files
        .iter()
        .filter(|f| starts_with(&f.module, &["crate", "server"]))
        .count();
    assert!(server > 40, "the server's files were read ({server})");

    let found = cycles(files, &["crate", "server"]);

    assert!(found.is_empty(), "import circles:\n{}", found.join("\n"));
}

#[test]
fn the_circle_check_sees_a_circle() {
    let file = |module: &[&str], refs: &[&[&str]]| SourceFile {
        name: module.join("/"),
        module: module.iter().map(|s| s.to_string()).collect(),
        refs: refs
            .iter()
            .map(|r| r.iter().map(|s| s.to_string()).collect())
            .collect(),
    };
    let files = [
        file(&["crate", "server"], &[]),
        file(
            &["crate", "server", "state"],
            &[&["crate", "server", "sandbox", "Service"]],
        ),
        file(
            &["crate", "server", "sandbox"],
            &[&["crate", "server", "history", "cut"]],
        ),
        file(
            &["crate", "server", "history"],
            &[&["crate", "server", "state", "AppState"]],
        ),
    ];

    let found = cycles(&files, &["crate", "server"]);

    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("history -> state -> sandbox -> history"),
        "{found:?}"
    );
}

#[test]
fn only_the_doors_touch_axum_and_no_service_sees_the_app_state() {
    let files = read_sources();
    let host = ["startup", "serve", "state"];
    let is_door = |f: &SourceFile| {
        starts_with(&f.module, &["crate", "server", "routes"])
            || host
                .iter()
                .any(|h| f.module == ["crate", "server", h].map(str::to_owned))
    };
    let mut wrong = Vec::new();
    for file in files
        .iter()
        .filter(|f| starts_with(&f.module, &["crate", "server"]))
    {
        if is_door(file) {
            continue;
        }
        if let Some(path) = touches(file, "axum") {
            wrong.push(format!("{} uses {path}", file.name));
        }
        if let Some(path) = file
            .refs
            .iter()
            .find(|r| starts_with(r, &["crate", "server", "state"]))
        {
            wrong.push(format!("{} uses {}", file.name, path.join("::")));
        }
    }
    assert!(
        wrong.is_empty(),
        "services that touch doors:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn providers_never_touch_the_web_and_the_ui_never_touches_backends() {
    let files = read_sources();
    let mut wrong = Vec::new();
    for file in files {
        let forbidden: &[&str] = if starts_with(&file.module, &["crate", "sandbox"]) {
            &["axum", "leptos", "leptos_axum"]
        } else if starts_with(&file.module, &["crate", "app"]) {
            &["bollard", "sqlx", "reqwest"]
        } else {
            &[]
        };
        for krate in forbidden {
            if let Some(path) = touches(file, krate) {
                wrong.push(format!("{} uses {path}", file.name));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Every key of one locale file, as dotted paths (`settings.group.network`).
fn locale_keys(file: &str) -> std::collections::BTreeSet<String> {
    fn walk(value: &serde_json::Value, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, value) in map {
                    let path = if prefix.is_empty() {
                        key.clone()
                    } else {
                        format!("{prefix}.{key}")
                    };
                    walk(value, &path, out);
                }
            }
            serde_json::Value::String(text) => {
                assert!(!text.trim().is_empty(), "{prefix} is empty");
                out.insert(prefix.to_owned());
            }
            other => panic!("{prefix} is not text: {other}"),
        }
    }
    let path = format!("{}/locales/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let json: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut out = std::collections::BTreeSet::new();
    walk(&json, "", &mut out);
    out
}

#[test]
fn every_translation_key_is_in_both_languages() {
    let english = locale_keys("en.json");
    let chinese = locale_keys("zh-CN.json");
    assert!(
        english.len() > 100,
        "the English file was read ({})",
        english.len()
    );

    let only_english: Vec<_> = english.difference(&chinese).collect();
    let only_chinese: Vec<_> = chinese.difference(&english).collect();

    assert!(
        only_english.is_empty() && only_chinese.is_empty(),
        "missing in zh-CN.json: {only_english:?}; missing in en.json: {only_chinese:?}"
    );
}

#[test]
fn the_key_check_sees_a_missing_key() {
    let english = locale_keys("en.json");
    let mut chinese = locale_keys("zh-CN.json");
    chinese.remove("settings.save");
    assert_eq!(
        english.difference(&chinese).collect::<Vec<_>>(),
        [&"settings.save".to_owned()]
    );
}

/// Where a `<textarea>` in view code does not take its text escaped: Leptos writes a
/// textarea's children to the server's HTML as they are, so every textarea must have none and
/// take its text as `inner_html=textarea_html(…)` (see `app::format::textarea_html`).
fn unescaped_textareas(source: &str) -> Vec<String> {
    // Comments may name the element; only code makes one.
    let code: String = source
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .flat_map(|line| [line, "\n"])
        .collect();
    let mut found = Vec::new();
    let mut rest = code.as_str();
    while let Some(start) = rest.find("<textarea") {
        let tail = &rest[start..];
        let end = tail
            .find("</textarea>")
            .map_or(tail.len(), |e| e + "</textarea>".len());
        let element = &tail[..end];
        if !(element.contains("inner_html=textarea_html(") && element.ends_with("></textarea>")) {
            found.push(element.lines().next().unwrap_or_default().trim().to_owned());
        }
        rest = &tail[end..];
    }
    found
}

#[test]
fn every_textarea_takes_its_text_escaped() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src/app"),
        &mut files,
    );
    let mut offenders = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).unwrap();
        for element in unescaped_textareas(&source) {
            offenders.push(format!("{}: {element}", file.display()));
        }
    }
    assert_eq!(offenders, Vec::<String>::new());
    // The check sees the 2026-12-06 bug (the environments form's textareas).
    let broken = "<textarea id=\"env-python\" name=\"python_requirements\">\n{form.python_requirements.clone()}\n</textarea>";
    assert_eq!(unescaped_textareas(broken).len(), 1);
    let fixed = "<textarea id=\"x\" name=\"y\"\n inner_html=textarea_html(&form.y)></textarea>";
    assert!(unescaped_textareas(fixed).is_empty());
    let comment = "/// Leptos writes a `<textarea>`'s children as they are.\nfn f() {}";
    assert!(unescaped_textareas(comment).is_empty());
}
