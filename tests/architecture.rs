//! ARCHITECTURE.md's rules, checked over the source text of `src/` (and `Cargo.toml`), so that
//! breaking one fails `cargo test` with the file, the line and what to do:
//!
//! - the layers import only to their left (Rule 2);
//! - the core has no browser types (Rule 1);
//! - comments carry no history and cite nothing outside the repository (Rule 5);
//! - the test hooks and the fixtures never reach a release build (Rule 6);
//! - the reading layer never unwraps (Rule 4, the part a text scan can see);
//! - the pass layer's accumulators derive no serde: its messages are `pass::wire`'s (Rule 7).
//!
//! The scan is lexical: comments and literals are blanked first, and items behind a
//! `#[cfg(test)]` (or any `cfg` that needs `test`) are left out, since test code may use anything.

use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Where each layer of `src/` stands in the flow (ARCHITECTURE.md, "The flow"): read → pass →
/// explain → result → run (which drives that chain) → charts (which draws a Report). A module may
/// use its own layer and those with a lower rank. `worker` and `ui` are the browser side, over all
/// of them; `fixtures` is test data, which no product module uses.
fn rank(layer: &str) -> Option<usize> {
    Some(match layer {
        "read" => 0,
        "pass" => 1,
        "explain" => 2,
        "result" => 3,
        "run" => 4,
        "charts" => 5,
        "worker" | "ui" => 6,
        "fixtures" => 7,
        _ => return None,
    })
}

/// The layers that make up the core: pure Rust, compiled and tested natively.
const CORE: [&str; 6] = ["read", "pass", "explain", "result", "run", "charts"];

/// One source file, lexed once.
struct Source {
    /// Relative to the repository root, with `/` separators (`src/read/locate.rs`).
    path: String,
    /// The text with comments and the contents of literals replaced by spaces (newlines kept, so
    /// offsets and lines are the original's), and test-only items blanked too.
    code: Vec<char>,
    /// The text with only comments blanked: attributes' strings and literals kept.
    with_literals: Vec<char>,
    /// String literals (their char ranges, quotes included), outside test-only items.
    literals: Vec<Range<usize>>,
    /// Each line of each comment: (line number, text).
    comments: Vec<(usize, String)>,
    line_starts: Vec<usize>,
}

impl Source {
    fn line(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= offset)
    }

    fn at(&self, offset: usize) -> String {
        format!("{}:{}", self.path, self.line(offset))
    }

    /// The layer a file belongs to: the first folder under `src/` (none for `lib.rs`, `main.rs`
    /// and `bin/`, the entry points).
    fn layer(&self) -> Option<&str> {
        let rest = self.path.strip_prefix("src/")?;
        let (first, _) = rest.split_once('/')?;
        rank(first).map(|_| first)
    }

    /// The module path of the file (`src/pass/kernel/mod.rs` → `pass::kernel`).
    fn module_path(&self) -> Vec<String> {
        let rest = self.path.strip_prefix("src/").unwrap_or(&self.path);
        let rest = rest.strip_suffix(".rs").unwrap_or(rest);
        let mut parts: Vec<String> = rest.split('/').map(str::to_string).collect();
        if parts.last().is_some_and(|p| p == "mod" || p == "lib" || p == "main") {
            parts.pop();
        }
        parts
    }
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A text's comments and literals, apart from its code (blanked to spaces, newlines kept, so that
/// offsets and lines stay the original's).
struct Lexed {
    /// Comments and the contents of literals blanked.
    code: Vec<char>,
    /// Only comments blanked.
    with_literals: Vec<char>,
    /// String literals, quotes included.
    literals: Vec<Range<usize>>,
    /// Each line of each comment: (line number, text).
    comments: Vec<(usize, String)>,
}

/// Rust (or WGSL) text lexed: line and nested block comments, strings, raw strings, chars.
fn lex(text: &str) -> Lexed {
    let s: Vec<char> = text.chars().collect();
    let n = s.len();
    let mut code = s.clone();
    let mut with_literals = s.clone();
    let mut literals = Vec::new();
    let mut comments = Vec::new();
    let blank = |v: &mut Vec<char>, r: Range<usize>| {
        for c in &mut v[r] {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    let mut line = 1;
    let mut i = 0;
    while i < n {
        let c = s[i];
        let next = s.get(i + 1).copied();
        let prev_ident = i > 0 && is_ident(s[i - 1]);
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c == '/' && next == Some('/') {
            let end = s[i..].iter().position(|&c| c == '\n').map_or(n, |p| i + p);
            comments.push((line, s[i..end].iter().collect()));
            blank(&mut code, i..end);
            blank(&mut with_literals, i..end);
            i = end;
        } else if c == '/' && next == Some('*') {
            let (mut depth, mut j) = (1, i + 2);
            while j < n && depth > 0 {
                if s[j] == '/' && s.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if s[j] == '*' && s.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            let body: String = s[i..j].iter().collect();
            for (k, l) in body.split('\n').enumerate() {
                comments.push((line + k, l.to_string()));
            }
            line += body.matches('\n').count();
            blank(&mut code, i..j);
            blank(&mut with_literals, i..j);
            i = j;
        } else if !prev_ident && (c == 'r' || (c == 'b' && next == Some('r'))) && raw_string_at(&s, i).is_some() {
            let end = raw_string_at(&s, i).unwrap_or(n);
            line += s[i..end].iter().filter(|&&c| c == '\n').count();
            literals.push(i..end);
            blank(&mut code, i..end);
            i = end;
        } else if c == '"' {
            let mut j = i + 1;
            while j < n && s[j] != '"' {
                j += if s[j] == '\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(n);
            line += s[i..end].iter().filter(|&&c| c == '\n').count();
            literals.push(i..end);
            blank(&mut code, i..end);
            i = end;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{1F600}'), or else a lifetime or label, left as code.
            let end = if next == Some('\\') {
                s.get(i + 3..).and_then(|r| r.iter().position(|&c| c == '\'')).map(|p| i + 3 + p + 1)
            } else if s.get(i + 2) == Some(&'\'') {
                Some(i + 3)
            } else {
                None
            };
            match end {
                Some(end) => {
                    blank(&mut code, i..end);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    Lexed { code, with_literals, literals, comments }
}

/// The end of a raw string (`r"…"`, `r#"…"#`, `br"…"`) starting at `i`, if one does.
fn raw_string_at(s: &[char], i: usize) -> Option<usize> {
    let mut j = i + if s[i] == 'b' { 2 } else { 1 };
    let mut hashes = 0;
    while s.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if s.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < s.len() {
        if s[j] == '"' && (1..=hashes).all(|k| s.get(j + k) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(s.len())
}

/// The index just past the bracket that closes the one at `open` (`(`, `[` or `{`).
fn close_of(code: &[char], open: usize) -> usize {
    let mut depth = 0i32;
    for (j, &c) in code.iter().enumerate().skip(open) {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// The char ranges of items behind a `#[cfg(…)]` whose predicate `gate` accepts (from the
/// attribute to the end of the item: its `;` or its closing brace); an inner `#![cfg(…)]` gates
/// the whole file. `gate` sees the predicate with its strings.
fn gated(code: &[char], with_literals: &[char], gate: impl Fn(&str) -> bool) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < code.len() {
        if code[i] != '#' {
            i += 1;
            continue;
        }
        let inner = code.get(i + 1) == Some(&'!');
        let open = i + 1 + usize::from(inner);
        if code.get(open) != Some(&'[') {
            i += 1;
            continue;
        }
        let end = close_of(code, open);
        let attr: String = with_literals[open + 1..end - 1].iter().collect();
        let attr = attr.trim();
        let predicate = attr.strip_prefix("cfg").map(str::trim_start).filter(|p| p.starts_with('('));
        if !predicate.is_some_and(&gate) {
            i = end;
            continue;
        }
        if inner {
            out.push(0..code.len());
            return out;
        }
        // Further attributes of the same item, then the item up to its `;` or its body's end.
        let mut j = end;
        loop {
            while j < code.len() && code[j].is_whitespace() {
                j += 1;
            }
            if code.get(j) == Some(&'#') && code.get(j + 1) == Some(&'[') {
                j = close_of(code, j + 1);
            } else {
                break;
            }
        }
        let mut depth = 0i32;
        let mut item_end = code.len();
        while j < code.len() {
            match code[j] {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                ';' if depth == 0 => {
                    item_end = j + 1;
                    break;
                }
                '{' if depth == 0 => {
                    item_end = close_of(code, j);
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        out.push(i..item_end);
        i = item_end;
    }
    out
}

/// A `cfg` predicate with its `not(…)` parts removed: what it asks to be on.
fn positive(predicate: &str) -> String {
    let mut p = predicate.to_string();
    while let Some(at) = p.find("not(") {
        let chars: Vec<char> = p.chars().collect();
        let open = p[..at + 3].chars().count();
        let end = close_of(&chars, open);
        let start = p[..at].chars().count();
        p = chars[..start].iter().chain(&chars[end..]).collect();
    }
    p
}

/// A predicate that only holds in a test build (`test`, `all(test, …)`).
fn needs_test(predicate: &str) -> bool {
    // Outside quotes: `feature = "test-hooks"` is not `test`.
    let p = positive(predicate);
    let unquoted: String = p.split('"').step_by(2).collect::<Vec<_>>().join(" ");
    unquoted.split(|c: char| !is_ident(c)).any(|w| w == "test")
}

/// A predicate that only holds with the cargo feature `name` on.
fn needs_feature(predicate: &str, name: &str) -> bool {
    let p: String = positive(predicate).chars().filter(|c| !c.is_whitespace()).collect();
    p.contains(&format!("feature=\"{name}\""))
}

fn blank_ranges(v: &mut [char], ranges: &[Range<usize>]) {
    for r in ranges {
        for c in &mut v[r.clone()] {
            if *c != '\n' {
                *c = ' ';
            }
        }
    }
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap_or_else(|e| panic!("{}: {e}", dir.display())).path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files_under(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs" || e == "wgsl") {
            out.push(path);
        }
    }
}

/// Every `.rs` and `.wgsl` file under `src/`, lexed, test-only items blanked.
fn sources() -> Vec<Source> {
    let root = Path::new(ROOT);
    let mut paths = Vec::new();
    files_under(&root.join("src"), &mut paths);
    assert!(paths.len() > 50, "found only {} files under {}/src", paths.len(), ROOT);
    paths
        .iter()
        .map(|p| {
            let text = fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let rel = p.strip_prefix(root).unwrap_or(p).to_string_lossy().replace('\\', "/");
            let Lexed { mut code, mut with_literals, literals, comments } = lex(&text);
            let tests = gated(&code, &with_literals, needs_test);
            blank_ranges(&mut code, &tests);
            blank_ranges(&mut with_literals, &tests);
            let literals = literals.into_iter().filter(|l| !tests.iter().any(|t| t.contains(&l.start))).collect();
            let mut line_starts = vec![0];
            line_starts.extend(code.iter().enumerate().filter(|(_, &c)| c == '\n').map(|(i, _)| i + 1));
            Source { path: rel, code, with_literals, literals, comments, line_starts }
        })
        .collect()
}

#[derive(Debug, PartialEq)]
enum Tok {
    Ident(String),
    Path,
    Punct(char),
}

/// Identifiers, `::` and single punctuation, with their offsets (numbers and whitespace dropped).
fn tokens(code: &[char]) -> Vec<(usize, Tok)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let c = code[i];
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < code.len() && is_ident(code[i]) {
                i += 1;
            }
            out.push((start, Tok::Ident(code[start..i].iter().collect())));
        } else if c.is_ascii_digit() {
            while i < code.len() && is_ident(code[i]) {
                i += 1;
            }
        } else if c == ':' && code.get(i + 1) == Some(&':') {
            out.push((i, Tok::Path));
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push((i, Tok::Punct(c)));
            }
            i += 1;
        }
    }
    out
}

fn ident(t: Option<&(usize, Tok)>) -> Option<&str> {
    match t {
        Some((_, Tok::Ident(s))) => Some(s),
        _ => None,
    }
}

/// The first segment of each item of the `{…}` group whose `{` is token `open`: the names a
/// `crate::{a, b::c}` reaches.
fn group_heads(toks: &[(usize, Tok)], open: usize) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut expect_head = true;
    for (at, t) in &toks[open..] {
        match t {
            Tok::Punct('{') => {
                depth += 1;
                expect_head = depth == 1;
            }
            Tok::Punct('}') => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            Tok::Punct(',') if depth == 1 => expect_head = true,
            Tok::Ident(s) if expect_head && depth == 1 => {
                out.push((*at, s.clone()));
                expect_head = false;
            }
            _ => {}
        }
    }
    out
}

/// The names `lib.rs` re-exports at the crate root, with the layer each comes from
/// (`crate::Report` is `crate::result::…`).
fn root_reexports(lib: &Source) -> Vec<(String, String)> {
    let toks = tokens(&lib.code);
    let mut out = Vec::new();
    for (k, (_, t)) in toks.iter().enumerate() {
        if *t != Tok::Ident("use".into()) {
            continue;
        }
        let Some(layer) = ident(toks.get(k + 1)).filter(|l| rank(l).is_some()) else { continue };
        let end = toks[k..].iter().position(|(_, t)| *t == Tok::Punct(';')).map_or(toks.len(), |p| k + p);
        // The names brought in: the last segment, or each item of a final group.
        for j in k + 1..end {
            if let Some(name) = ident(toks.get(j)) {
                let after = toks.get(j + 1).map(|(_, t)| t);
                if matches!(after, Some(Tok::Punct(';')) | Some(Tok::Punct(',')) | Some(Tok::Punct('}'))) {
                    out.push((name.to_string(), layer.to_string()));
                }
            }
        }
    }
    out
}

/// Every layer a file names through `crate::…` (groups included) or a `super::` that climbs to
/// the crate root, with the offset of the name.
fn layer_refs(src: &Source, reexports: &[(String, String)]) -> Vec<(usize, String)> {
    let toks = tokens(&src.code);
    let mut out = Vec::new();
    let top = |at: usize, name: &str, out: &mut Vec<(usize, String)>| {
        if rank(name).is_some() {
            out.push((at, name.to_string()));
        } else if let Some((_, layer)) = reexports.iter().find(|(n, _)| n == name) {
            out.push((at, layer.clone()));
        }
    };
    let heads = |k: usize, out: &mut Vec<(usize, String)>| match toks.get(k) {
        Some((at, Tok::Ident(name))) => top(*at, name, out),
        Some((_, Tok::Punct('{'))) => {
            for (at, name) in group_heads(&toks, k) {
                top(at, &name, out);
            }
        }
        _ => {}
    };
    // Inline modules (`mod name { … }`) deepen the path a `super::` climbs from.
    let mut path = src.module_path();
    let mut inline: Vec<i32> = Vec::new();
    let mut depth = 0i32;
    for k in 0..toks.len() {
        match &toks[k].1 {
            Tok::Punct('{') => depth += 1,
            Tok::Punct('}') => {
                depth -= 1;
                if inline.last() == Some(&depth) {
                    inline.pop();
                    path.pop();
                }
            }
            Tok::Ident(m) if m == "mod" => {
                if let (Some(name), Some((_, Tok::Punct('{')))) = (ident(toks.get(k + 1)), toks.get(k + 2)) {
                    path.push(name.to_string());
                    inline.push(depth);
                }
            }
            Tok::Ident(c) if c == "crate" => {
                let macro_crate = k > 0 && toks[k - 1].1 == Tok::Punct('$');
                if !macro_crate && toks.get(k + 1).map(|t| &t.1) == Some(&Tok::Path) {
                    heads(k + 2, &mut out);
                }
            }
            Tok::Ident(s) if s == "super" => {
                let after_path = k > 0 && toks[k - 1].1 == Tok::Path;
                if after_path {
                    continue;
                }
                let mut j = k;
                let mut climbs = 0;
                while ident(toks.get(j)) == Some("super") && toks.get(j + 1).map(|t| &t.1) == Some(&Tok::Path) {
                    climbs += 1;
                    j += 2;
                }
                if climbs > 0 && climbs >= path.len() {
                    heads(j, &mut out);
                }
            }
            _ => {}
        }
    }
    out
}

/// Rule 2: imports go left to right along the flow; a layer never reaches back.
#[test]
fn layers_import_only_from_their_left() {
    let sources = sources();
    let lib = sources.iter().find(|s| s.path == "src/lib.rs").unwrap_or_else(|| panic!("no src/lib.rs"));
    let reexports = root_reexports(lib);
    assert!(reexports.iter().any(|(n, l)| n == "Report" && l == "result"), "lib.rs re-exports: {reexports:?}");
    let mut seen = 0;
    let mut broken = Vec::new();
    for src in &sources {
        let Some(layer) = src.layer() else { continue };
        let own = rank(layer).unwrap_or(0);
        for (at, target) in layer_refs(src, &reexports) {
            seen += 1;
            if rank(&target).is_some_and(|r| r > own) {
                broken.push(format!(
                    "{}: `{layer}` uses `crate::{target}`, which comes after it in the flow (read → pass → \
                     explain → result → run → charts; worker/ui over all; fixtures for tests only). \
                     Move the value to the left, or have the caller pass it in (ARCHITECTURE.md, Rule 2).",
                    src.at(at)
                ));
            }
        }
    }
    // The scan finds the crate's imports at all (hundreds of them), so an empty list means something.
    assert!(seen > 100, "only {seen} crate-internal references found: the scanner is broken");
    assert!(broken.is_empty(), "{} import(s) against the flow:\n{}", broken.len(), broken.join("\n"));
}

/// Rule 1: the core has no browser types.
#[test]
fn the_core_has_no_browser_types() {
    const BROWSER: [&str; 8] = [
        "web_sys",
        "js_sys",
        "wasm_bindgen",
        "wasm_bindgen_futures",
        "serde_wasm_bindgen",
        "leptos",
        "plotters_canvas",
        "console_error_panic_hook",
    ];
    let mut broken = Vec::new();
    let mut core_files = 0;
    for src in sources().iter().filter(|s| s.layer().is_some_and(|l| CORE.contains(&l))) {
        core_files += 1;
        for (at, t) in tokens(&src.code) {
            if let Tok::Ident(name) = t {
                if BROWSER.contains(&name.as_str()) {
                    broken.push(format!(
                        "{}: `{name}` in the core ({}): browser APIs belong in src/worker/ or src/ui/, \
                         behind a trait the core defines (as `read::source::ByteSource` is) \
                         (ARCHITECTURE.md, Rule 1).",
                        src.at(at),
                        CORE.join(", ")
                    ));
                }
            }
        }
    }
    assert!(core_files > 40, "only {core_files} core files found");
    assert!(broken.is_empty(), "browser types in the core:\n{}", broken.join("\n"));
}

/// What a comment must not say: a citation of an issue or a pull request, a point in the
/// project's history, or a path outside the repository.
fn history_in(comment: &str) -> Option<&'static str> {
    let lower = comment.to_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !(is_ident(c) || c == '#')).filter(|w| !w.is_empty()).collect();
    let number = |w: &str| {
        let w = w.strip_prefix('#').unwrap_or(w);
        !w.is_empty() && w.chars().all(|c| c.is_ascii_digit())
    };
    for pair in words.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if (matches!(a, "issue" | "issues" | "ticket") || (a == "pr" && b.starts_with('#'))) && number(b) {
            return Some("cites an issue");
        }
        if matches!(a, "issue" | "issues" | "brief" | "ticket")
            && matches!(b, "asks" | "asked" | "says" | "said" | "shows" | "show" | "wants" | "requires" | "requested")
        {
            return Some("cites an issue");
        }
        if matches!(a, "see" | "fixes" | "fixed" | "closes" | "per" | "in") && b.starts_with('#') && number(b) {
            return Some("cites an issue");
        }
        if matches!(a, "stop" | "session") && number(b) {
            return Some("names a point in the project's history");
        }
        if matches!(a, "last" | "previous" | "earlier" | "prior") && b == "session" {
            return Some("names a point in the project's history");
        }
    }
    if lower.contains("pull request") || lower.contains("/issues/") || lower.contains("/pull/") {
        return Some("cites an issue");
    }
    for outside in ["../", "/work/", "/tmp/", "/home/", "~/", "paper.md"] {
        if lower.contains(outside) {
            return Some("cites a path outside the repository");
        }
    }
    let shared = lower.match_indices("shared/").any(|(at, _)| !lower[..at].ends_with(|c: char| is_ident(c)));
    if shared {
        return Some("cites a path outside the repository");
    }
    None
}

/// Rule 5: no history in the code, and nothing cited that a reader of the repository cannot open.
/// ("this session" is not history here: the page's session is the table of a visit's analyses.)
#[test]
fn comments_carry_no_history_and_no_outside_citations() {
    // The patterns catch what they are meant to, and not the code's own uses of `#`.
    for (comment, hit) in [
        ("// the issue asks for ≥ 2048", true),
        ("// see issue #12", true),
        ("// fixed in #37", true),
        ("// fixes #37", true),
        ("// PR #5", true),
        ("// `refs/pr/1` → `refs%2Fpr%2F1`", false),
        ("// as the issues show", true),
        ("// added at stop 35", true),
        ("// from session 4", true),
        ("// as in the previous session", true),
        ("// the paper (../shared/paper.md)", true),
        ("// copied from /work/main", true),
        ("// docs/method.md §1", false),
        ("// \"“the” (#1820)\", or \"#1820\" without a vocabulary", false),
        ("/* #[derive(Debug)] #[cfg(test)] colour #0072b2 */", false),
        ("// Stop here keeps the estimate", false),
        ("// every analysis of this session is a row", false),
        ("// the worker issues a Range request", false),
    ] {
        assert_eq!(history_in(comment).is_some(), hit, "{comment}");
    }
    let mut broken = Vec::new();
    for src in sources() {
        for (line, text) in &src.comments {
            if let Some(why) = history_in(text) {
                broken.push(format!(
                    "{}:{line}: the comment {why}: {}. Say why the code is as it is, in words that \
                     stand alone (cite docs/method.md by section for the science) (ARCHITECTURE.md, Rule 5).",
                    src.path,
                    text.trim()
                ));
            }
        }
    }
    assert!(broken.is_empty(), "{} comment(s) with history or outside citations:\n{}", broken.len(), broken.join("\n"));
}

/// Text that only the end-to-end tests' build may hold: the crash hooks' query parameters and
/// messages (`scripts/test.sh`'s end-to-end step looks for these in the release `dist/`, through
/// tests/e2e/choose.test.mjs).
const HOOK_MARKERS: [&str; 4] = ["crash_after_rows", "test crash", "test out of memory", "?crash="];
/// The values of `?crash=`, matched as whole literals.
const HOOK_VALUES: [&str; 4] = ["\"crash\"", "\"oom\"", "\"gpu-lost\"", "\"slow-band\""];

/// Test hooks compiled into every build, each with why it cannot be reached from a release build.
const HOOK_EXCEPTIONS: [(&str, &str, &str); 4] = [
    (
        "lose_device_for_test",
        "src/pass/gpu/mod.rs",
        "its definitions: destroying one's own device is harmless, and the native GPU tests call it",
    ),
    (
        "lose_device_for_test",
        "src/run/threads.rs",
        "called only when `PassRequest::lose_gpu_after_rows` is set, which nothing in src/ sets",
    ),
    (
        "lose_device_for_test",
        "src/worker/run/analyze.rs",
        "called only when `crash::gpu_loss_asked` is true, which it never is without `test-hooks`",
    ),
    ("lose_gpu_after_rows", "src/run/threads.rs", "the field and its one reader; only tests/gpu_pass.rs sets it"),
];

/// Rule 6, the test hooks: what the cargo feature `test-hooks` gates is only used behind
/// `#[cfg(feature = "test-hooks")]`, and the few hooks in every build are the known, unreachable ones.
#[test]
fn test_hooks_are_behind_their_feature() {
    let sources = sources();
    let mut broken = Vec::new();
    let mut gated_hooks = 0;
    for src in &sources {
        let hooks = gated(&src.code, &src.with_literals, |p| needs_feature(p, "test-hooks"));
        for lit in &src.literals {
            let text: String = src.with_literals[lit.clone()].iter().collect();
            let marked = HOOK_MARKERS.iter().any(|m| text.contains(m)) || HOOK_VALUES.contains(&text.as_str());
            if !marked {
                continue;
            }
            if hooks.iter().any(|h| h.contains(&lit.start)) {
                gated_hooks += 1;
            } else {
                broken.push(format!(
                    "{}: {text} is a test hook outside `#[cfg(feature = \"test-hooks\")]`: a release build \
                     would hold it. Put the item behind the feature, with a `#[cfg(not(feature = \
                     \"test-hooks\"))]` stand-in that does nothing (as src/worker/run/crash.rs does) \
                     (ARCHITECTURE.md, Rule 6).",
                    src.at(lit.start)
                ));
            }
        }
        for (at, t) in tokens(&src.code) {
            let Tok::Ident(name) = t else { continue };
            if !HOOK_EXCEPTIONS.iter().any(|(hook, _, _)| *hook == name) {
                continue;
            }
            let known = HOOK_EXCEPTIONS.iter().any(|(hook, file, _)| *hook == name && *file == src.path);
            let in_bin = src.path.starts_with("src/bin/") || src.path == "src/main.rs";
            if !known || in_bin {
                broken.push(format!(
                    "{}: `{name}` is a test hook in every build, used here where nothing shows it \
                     unreachable: gate it with the cargo feature `test-hooks`, or add it to \
                     HOOK_EXCEPTIONS in tests/architecture.rs with why a release build cannot reach it \
                     (ARCHITECTURE.md, Rule 6).",
                    src.at(at)
                ));
            }
        }
    }
    // The hooks exist (the page's `?crash_after_rows=` and the worker's crash), all gated: an
    // empty list above means they were found and are behind the feature.
    assert!(broken.is_empty(), "test hooks in a release build:\n{}", broken.join("\n"));
    assert!(gated_hooks >= 4, "only {gated_hooks} gated test-hook literals found: were the hooks renamed?");
}

/// `Cargo.toml` as (table header, key, value) triples, a multi-line value joined onto one line.
fn manifest() -> Vec<(String, String, String)> {
    let text = fs::read_to_string(Path::new(ROOT).join("Cargo.toml")).unwrap_or_else(|e| panic!("Cargo.toml: {e}"));
    let mut out = Vec::new();
    let mut table = String::new();
    let mut pending: Option<(String, String)> = None;
    for raw in text.lines() {
        let line = raw.split_once(" #").map_or(raw, |(l, _)| l).trim();
        if let Some((key, value)) = pending.as_mut() {
            value.push(' ');
            value.push_str(line);
            let balanced = value.matches(['[', '{']).count() == value.matches([']', '}']).count();
            if balanced {
                out.push((table.clone(), key.clone(), value.clone()));
                pending = None;
            }
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with('[') {
            table = line.trim_matches(['[', ']']).to_string();
            continue;
        }
        if let Some((key, value)) = line.split_once('=') {
            let (key, value) = (key.trim().to_string(), value.trim().to_string());
            if value.matches(['[', '{']).count() == value.matches([']', '}']).count() {
                out.push((table.clone(), key, value));
            } else {
                pending = Some((key, value));
            }
        }
    }
    out
}

/// The quoted strings in a TOML value.
fn quoted(value: &str) -> Vec<String> {
    value.split('"').skip(1).step_by(2).map(str::to_string).collect()
}

/// Rule 6, the fixtures: `fixtures` (and `test-hooks`) are never on by default nor pulled in by
/// another feature or a non-dev dependency; a binary that uses the fixtures requires the feature;
/// `lib.rs` compiles `fixtures` only with it (the layering test shows no product module uses it).
#[test]
fn fixtures_and_hooks_are_never_on_in_a_release_build() {
    const TEST_ONLY: [&str; 2] = ["fixtures", "test-hooks"];
    let manifest = manifest();
    let mut broken = Vec::new();
    let default = manifest.iter().find(|(t, k, _)| t == "features" && k == "default");
    assert!(default.is_some(), "Cargo.toml has no [features] default: the scan of Cargo.toml is broken");
    for (table, key, value) in &manifest {
        let named = quoted(value);
        if table == "features" && !TEST_ONLY.contains(&key.as_str()) {
            for f in
                named.iter().filter(|f| TEST_ONLY.iter().any(|t| f.as_str() == *t || f.ends_with(&format!("/{t}"))))
            {
                broken.push(format!(
                    "Cargo.toml [features] {key} turns on `{f}`, a test-only feature: {}",
                    if key == "default" { "every build would have it" } else { "a build with it would too" }
                ));
            }
        }
        let dependency_table = table == "dependencies" || table.ends_with(".dependencies");
        if dependency_table && (key == "orthoscope" || value.contains("path = \".\"")) {
            broken.push(format!(
                "Cargo.toml [{table}] {key}: the crate depends on itself outside [dev-dependencies], \
                 which would build the library with {value} in a release"
            ));
        }
    }
    let dev = manifest.iter().find(|(t, k, _)| t == "dev-dependencies" && k == "orthoscope");
    assert!(
        dev.is_some_and(|(_, _, v)| quoted(v).contains(&"fixtures".to_string())),
        "the tests get the fixtures through the self dev-dependency; it is gone: {dev:?}"
    );
    // Binaries: one that uses the fixtures must require the feature.
    let bins: Vec<&String> = manifest.iter().filter(|(t, k, _)| t == "bin" && k == "path").map(|(_, _, v)| v).collect();
    assert!(bins.len() >= 4, "Cargo.toml's [[bin]] tables: {bins:?}");
    let mut bin_tables: Vec<Vec<&(String, String, String)>> = Vec::new();
    for e in manifest.iter().filter(|(t, _, _)| t == "bin") {
        if e.1 == "name" || bin_tables.is_empty() {
            bin_tables.push(vec![e]);
        } else if let Some(last) = bin_tables.last_mut() {
            last.push(e);
        }
    }
    let sources = sources();
    for bin in &bin_tables {
        let get = |key: &str| bin.iter().find(|(_, k, _)| k == key).map(|(_, _, v)| v.as_str());
        let (Some(name), Some(path)) = (get("name"), get("path")) else { continue };
        let (name, path) = (quoted(name).concat(), quoted(path).concat());
        let requires = get("required-features").map(quoted).unwrap_or_default();
        let Some(src) = sources.iter().find(|s| s.path == path) else { continue };
        let uses_fixtures = tokens(&src.code).windows(3).any(|w| {
            w[0].1 == Tok::Ident("orthoscope".into()) && w[1].1 == Tok::Path && w[2].1 == Tok::Ident("fixtures".into())
        });
        if uses_fixtures && !requires.contains(&"fixtures".to_string()) {
            broken.push(format!(
                "Cargo.toml [[bin]] {name} ({path}) uses orthoscope::fixtures without \
                 required-features = [\"fixtures\"]: it would ship test data"
            ));
        }
    }
    let lib = sources.iter().find(|s| s.path == "src/lib.rs").unwrap_or_else(|| panic!("no src/lib.rs"));
    let gates = gated(&lib.code, &lib.with_literals, |p| needs_feature(p, "fixtures"));
    let toks = tokens(&lib.code);
    let module =
        toks.windows(2).find(|w| w[0].1 == Tok::Ident("mod".into()) && w[1].1 == Tok::Ident("fixtures".into()));
    let module = module.unwrap_or_else(|| panic!("src/lib.rs declares no `mod fixtures`"));
    if !gates.iter().any(|g| g.contains(&module[0].0)) {
        broken.push(format!("{}: `mod fixtures` is not behind #[cfg(feature = \"fixtures\")]", lib.at(module[0].0)));
    }
    assert!(
        broken.is_empty(),
        "test-only code would reach a release build (ARCHITECTURE.md, Rule 6):\n{}",
        broken.join("\n")
    );
}

/// `.unwrap()` and `.expect(…)` in `src/read/` outside test code, each allowed with why nothing read
/// from a file can reach it. Empty: the reading layer has none.
const READ_UNWRAP_EXCEPTIONS: [(&str, &str); 0] = [];

/// Rule 4, in the reading layer: no `unwrap` on anything read. Every failure there is a typed
/// error (`FormatError`, `ReadError`, `LocateError`, …), so the layer has no `.unwrap()` or
/// `.expect(…)` at all outside its tests.
#[test]
fn the_reading_layer_never_unwraps() {
    let mut broken = Vec::new();
    let mut read_files = 0;
    for src in sources().iter().filter(|s| s.layer() == Some("read")) {
        read_files += 1;
        let toks = tokens(&src.code);
        for w in toks.windows(3) {
            let (Tok::Punct('.'), Tok::Ident(name), Tok::Punct('(')) = (&w[0].1, &w[1].1, &w[2].1) else { continue };
            if !matches!(name.as_str(), "unwrap" | "expect" | "unwrap_unchecked") {
                continue;
            }
            let line = src.line(w[1].0);
            let place = format!("{}:{line}", src.path);
            if READ_UNWRAP_EXCEPTIONS.iter().any(|(p, _)| *p == place) {
                continue;
            }
            broken.push(format!(
                "{place}: `.{name}(` in the reading layer: return the layer's error (a `FormatError`, \
                 `ReadError`, … variant naming the file, tensor, offset or dtype) instead \
                 (ARCHITECTURE.md, Rule 4)."
            ));
        }
    }
    assert!(read_files > 20, "only {read_files} files found in src/read");
    assert!(broken.is_empty(), "{} unwrap(s) in src/read:\n{}", broken.len(), broken.join("\n"));
}

/// The types under `src/pass/` that may derive serde, and why: the Report's fields and the
/// requests' settings, which are messages by design. The accumulators are not: a worker sends its
/// partial as a message of `pass::wire`, whose types are all this rule lets through besides these.
const SERDE_AT_THE_BOUNDARY: [(&str, &str); 20] = [
    ("Moments", "the Report's moments"),
    ("RowCounts", "the Report's row counts"),
    ("SampledHistogram", "the Report's histograms"),
    ("TopPair", "the Report's tail explorer pairs"),
    ("Capacities", "the Report's capacity formulas"),
    ("CapacityProven", "the Report's proven capacity interval"),
    ("FloorBy", "the name of the Report's floor"),
    ("AtMostBy", "the name of the Report's upper bound"),
    ("AtLeastBy", "the name of the Report's lower bound"),
    ("Class", "the Report's class"),
    ("GpuInfo", "the Report's adapter"),
    ("GpuChoice", "a request's setting"),
    ("Precision", "a request's setting"),
    ("Split", "a request's setting"),
    ("Share", "a request's share of a split pass"),
    ("AnalysisConfig", "a request's settings"),
    ("Origin", "what the opened file is, in a request and the Report"),
    ("Phase", "the stage a progress message names"),
    ("Progress", "the progress message: a running estimate's values, no accumulator"),
    ("SampleVerdict", "the lead's verdict its helpers start with: precision and centre"),
];

/// The items after each `#[derive(..)]` naming `Serialize` or `Deserialize` in `src`: (offset, name).
fn serde_derived(src: &Source) -> Vec<(usize, String)> {
    let toks = tokens(&src.code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if ident(toks.get(i)) != Some("derive") || toks.get(i + 1).map(|t| &t.1) != Some(&Tok::Punct('(')) {
            i += 1;
            continue;
        }
        let close = (i + 1..toks.len()).find(|&j| toks[j].1 == Tok::Punct(')')).unwrap_or(toks.len());
        let serde = (i + 2..close).any(|j| matches!(ident(toks.get(j)), Some("Serialize" | "Deserialize")));
        let item = (close..toks.len()).find(|&j| matches!(ident(toks.get(j)), Some("struct" | "enum")));
        if let (true, Some(item)) = (serde, item) {
            if let Some(name) = ident(toks.get(item + 1)) {
                out.push((toks[i].0, name.to_string()));
            }
        }
        i = close;
    }
    out
}

/// Rule 7: the accumulators are not the wire format.
#[test]
fn the_pass_derives_serde_only_at_its_boundary() {
    let mut broken = Vec::new();
    let mut found = Vec::new();
    for src in sources().iter().filter(|s| s.path.starts_with("src/pass/")) {
        let wire = src.path == "src/pass/wire.rs";
        for (at, name) in serde_derived(src) {
            found.push(name.clone());
            if !wire && !SERDE_AT_THE_BOUNDARY.iter().any(|(n, _)| *n == name) {
                broken.push(format!(
                    "{}: `{name}` derives serde in the pass layer. An accumulator or kernel state is \
                     not a message: give the worker protocol a type of its own in src/pass/wire.rs \
                     and convert to and from it there (ARCHITECTURE.md, Rule 7).",
                    src.at(at)
                ));
            }
        }
        if !wire && tokens(&src.code).iter().any(|(_, t)| *t == Tok::Ident("postcard".into())) {
            broken.push(format!("{}: postcard outside src/pass/wire.rs (ARCHITECTURE.md, Rule 7).", src.path));
        }
    }
    // The scan sees the derives at all: the wire's messages and the Report's types.
    assert!(found.iter().any(|n| n == "PartialMessage") && found.iter().any(|n| n == "Moments"), "found {found:?}");
    assert!(broken.is_empty(), "serde past the pass layer's boundary:\n{}", broken.join("\n"));
}
