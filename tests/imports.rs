//! The module import graph of the whole crate has no circles.
//!
//! The graph is read from the sources, not from a list: the module tree is walked from each crate
//! root (`src/lib.rs`, and `src/main.rs` for the binary's `cli` and `app`) through its `mod`
//! declarations to the files on disk (`name.rs` or `name/mod.rs`), so a new module is in it as
//! soon as it is declared. Every `use` tree and every `crate::`/`super::`/`self::` path in the
//! code (comments and string literals removed) is an edge from the module it is written in to the
//! deepest module the path names. Inline modules (`mod tests { ... }`) count as their file.
//! A parent's `pub use` of its own descendants is a re-export (the facade), not a dependency of
//! its code, and makes no edge; everything else does.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module by its path from its crate root (`["learned", "model"]`; the root is `[]`).
type ModPath = Vec<String>;

/// One crate's modules: each file module with its source file, plus the inline modules, which
/// map to the file module they are written in.
#[derive(Default)]
struct Tree {
    files: BTreeMap<ModPath, PathBuf>,
    inline: BTreeMap<ModPath, ModPath>,
}

impl Tree {
    fn knows(&self, m: &[String]) -> bool {
        self.files.contains_key(m) || self.inline.contains_key(m)
    }

    /// The file module that holds `m`.
    fn file_of(&self, m: &[String]) -> ModPath {
        self.inline.get(m).cloned().unwrap_or_else(|| m.to_vec())
    }
}

/// `text` with comments, string and char literals blanked out (newlines kept).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, s: &[u8]| out.extend(s.iter().map(|&c| if c == b'\n' { b'\n' } else { b' ' }));
    while i < b.len() {
        let rest = &b[i..];
        let end = if rest.starts_with(b"//") {
            rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len())
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            let mut j = 0;
            loop {
                if j + 1 >= rest.len() {
                    break rest.len();
                }
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break j;
                    }
                } else {
                    j += 1;
                }
            }
        } else if (rest.starts_with(b"r\"") || rest.starts_with(b"r#") || rest.starts_with(b"br"))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            let start = if rest[0] == b'b' { 2 } else { 1 };
            let hashes = rest[start..].iter().take_while(|&&c| c == b'#').count();
            if rest.get(start + hashes) != Some(&b'"') {
                // An identifier that starts like a raw string (`branch`, `rate`) is code.
                out.push(rest[0]);
                i += 1;
                continue;
            } else {
                let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
                let body = start + hashes + 1;
                rest[body..]
                    .windows(close.len())
                    .position(|w| w == close)
                    .map_or(rest.len(), |p| body + p + close.len())
            }
        } else if rest[0] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            (j + 1).min(rest.len())
        } else if rest[0] == b'\'' && rest.get(1) == Some(&b'\\') {
            rest[2..].iter().position(|&c| c == b'\'').map_or(rest.len(), |p| p + 3)
        } else if rest[0] == b'\'' && rest.len() > 2 {
            // A one-character literal (`'x'`, or one multi-byte character); else a lifetime.
            let ch = std::str::from_utf8(&rest[1..rest.len().min(5)])
                .or_else(|e| std::str::from_utf8(&rest[1..1 + e.valid_up_to()]))
                .ok()
                .and_then(|s| s.chars().next())
                .map_or(1, char::len_utf8);
            if rest.get(1 + ch) == Some(&b'\'') { ch + 2 } else { 1 }
        } else {
            out.push(rest[0]);
            i += 1;
            continue;
        };
        blank(&mut out, &rest[..end]);
        i += end;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Splits code into identifiers, `::` and single punctuation characters.
fn tokens(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let b = code.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80) {
                i += 1;
            }
            out.push(&code[start..i]);
        } else if code[i..].starts_with("::") {
            out.push("::");
            i += 2;
        } else {
            let len = code[i..].chars().next().map_or(1, char::len_utf8);
            out.push(&code[i..i + len]);
            i += len;
        }
    }
    out
}

/// Expands the use tree starting at `t[*i]` (after `use`) into its paths, up to `;`.
fn use_tree(t: &[&str], i: &mut usize, prefix: &[String], out: &mut Vec<ModPath>) {
    let mut path = prefix.to_vec();
    while *i < t.len() {
        match t[*i] {
            "::" => *i += 1,
            "{" => {
                *i += 1;
                while *i < t.len() && t[*i] != "}" {
                    use_tree(t, i, &path, out);
                    if *i < t.len() && t[*i] == "," {
                        *i += 1;
                    }
                }
                *i += 1;
                return;
            }
            "," | "}" | ";" => break,
            "as" => *i += 2,
            "*" => *i += 1,
            seg => {
                path.push(seg.to_string());
                *i += 1;
            }
        }
    }
    out.push(path);
}

/// One reference from code: the path as written, and whether it is a `pub use` (a re-export).
struct Reference {
    module: ModPath,
    path: ModPath,
    reexport: bool,
}

/// Every module path referenced in one file module's code, from the module it is written in
/// (the file's, or an inline module's inside it); records the inline modules in `tree`.
fn references(file_module: &ModPath, code: &str, tree: &mut Tree) -> Vec<Reference> {
    let t = tokens(code);
    let mut out = Vec::new();
    // The inline modules open at this point, with the brace depth each one closes at.
    let mut scope: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let here = |scope: &[(String, usize)]| -> ModPath {
        file_module.iter().cloned().chain(scope.iter().map(|s| s.0.clone())).collect()
    };
    let mut i = 0;
    while i < t.len() {
        match t[i] {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if scope.last().is_some_and(|s| s.1 == depth) {
                    scope.pop();
                }
            }
            "mod" if t.get(i + 2) == Some(&"{") => {
                let name = t[i + 1].to_string();
                let mut m = here(&scope);
                m.push(name.clone());
                tree.inline.insert(m, file_module.clone());
                scope.push((name, depth));
            }
            "use" => {
                let reexport = i > 0 && (t[i - 1] == "pub" || t[i - 1] == ")");
                let mut j = i + 1;
                let mut paths = Vec::new();
                use_tree(&t, &mut j, &[], &mut paths);
                let module = here(&scope);
                out.extend(paths.into_iter().map(|path| Reference { module: module.clone(), path, reexport }));
                i = j;
                continue;
            }
            "crate" | "super" | "self" if t.get(i + 1) == Some(&"::") && (i == 0 || t[i - 1] != "::") => {
                let mut path = vec![t[i].to_string()];
                let mut j = i + 1;
                while t.get(j) == Some(&"::")
                    && t.get(j + 1).is_some_and(|s| s.chars().all(|c| c.is_alphanumeric() || c == '_'))
                {
                    path.push(t[j + 1].to_string());
                    j += 2;
                }
                out.push(Reference { module: here(&scope), path, reexport: false });
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The module a path written in `module` names, resolved against the tree: the deepest known
/// module along it. `None` for paths outside the crate (`std::`, `elbow::` from the binary).
fn resolve(tree: &Tree, module: &[String], path: &[String]) -> Option<ModPath> {
    let mut abs: ModPath = module.to_vec();
    let mut segs = path.iter().peekable();
    match segs.peek().map(|s| s.as_str()) {
        Some("crate") => {
            abs.clear();
            segs.next();
        }
        Some("self") => {
            segs.next();
        }
        Some("super") => {
            while segs.peek().map(|s| s.as_str()) == Some("super") {
                abs.pop()?;
                segs.next();
            }
        }
        // Edition 2018: a bare first segment is a child module of this one, or an outside crate.
        Some(first) => {
            let mut child = module.to_vec();
            child.push(first.to_string());
            if !tree.knows(&child) {
                return None;
            }
        }
        None => return None,
    }
    for s in segs {
        let mut next = abs.clone();
        next.push(s.clone());
        if !tree.knows(&next) {
            break;
        }
        abs = next;
    }
    Some(tree.file_of(&abs))
}

/// Walks the module tree from `root` (a crate root file) through its `mod NAME;` declarations.
fn walk(root: &Path) -> (Tree, BTreeMap<ModPath, String>) {
    let mut tree = Tree::default();
    let mut code = BTreeMap::new();
    let mut todo: Vec<(ModPath, PathBuf)> = vec![(Vec::new(), root.to_path_buf())];
    while let Some((module, file)) = todo.pop() {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let src = code_only(&text);
        // Children of `a/mod.rs`, `lib.rs` and `main.rs` live beside it; those of `a.rs` in `a/`.
        let stem = file.file_stem().unwrap().to_str().unwrap();
        let dir = if module.is_empty() || stem == "mod" {
            file.parent().unwrap().to_path_buf()
        } else {
            file.with_extension("")
        };
        let t = tokens(&src);
        for w in t.windows(3) {
            if w[0] == "mod" && w[2] == ";" {
                let (flat, nested) = (dir.join(format!("{}.rs", w[1])), dir.join(w[1]).join("mod.rs"));
                let child_file = if flat.exists() { flat } else { nested };
                assert!(child_file.exists(), "`mod {};` in {} has no file", w[1], file.display());
                let mut child = module.clone();
                child.push(w[1].to_string());
                todo.push((child, child_file));
            }
        }
        tree.files.insert(module.clone(), file);
        code.insert(module, src);
    }
    (tree, code)
}

/// The import graph of the crate rooted at `root`: each file module with the file modules it uses.
fn graph(root: &Path) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let (mut tree, code) = walk(root);
    let mut refs = Vec::new();
    for (module, src) in &code {
        refs.extend(references(module, src, &mut tree));
    }
    let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> =
        tree.files.keys().map(|m| (m.clone(), BTreeSet::new())).collect();
    for r in refs {
        let from = tree.file_of(&r.module);
        let Some(to) = resolve(&tree, &r.module, &r.path) else { continue };
        let facade = r.reexport && to.starts_with(&from);
        if to != from && !facade {
            edges.get_mut(&from).unwrap().insert(to);
        }
    }
    edges
}

/// Every circle of `edges` (a strongly connected set of more than one module), each as a
/// closed walk through its modules.
fn circles(edges: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    // Tarjan's strongly connected components.
    struct State<'a> {
        edges: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<&'a ModPath, usize>,
        low: BTreeMap<&'a ModPath, usize>,
        stack: Vec<&'a ModPath>,
        on_stack: BTreeSet<&'a ModPath>,
        out: Vec<Vec<ModPath>>,
    }
    fn connect<'a>(s: &mut State<'a>, v: &'a ModPath) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for w in &s.edges[v] {
            if !s.index.contains_key(w) {
                connect(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.reverse();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v) {
            connect(&mut s, v);
        }
    }
    s.out
}

fn name(crate_name: &str, m: &[String]) -> String {
    if m.is_empty() { crate_name.to_string() } else { m.join("::") }
}

/// The sources under test: cargo names the package's folder when it runs the test, which stays
/// right when a build cache shared between clones holds a binary compiled in another one.
fn src() -> PathBuf {
    let root =
        std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    root.join("src")
}

#[test]
fn the_crate_has_no_import_circle() {
    let mut found = Vec::new();
    let mut modules = 0;
    for (crate_name, root) in [("lib", "lib.rs"), ("bin", "main.rs")] {
        let edges = graph(&src().join(root));
        modules += edges.len();
        for c in circles(&edges) {
            let names: Vec<String> = c.iter().map(|m| name(crate_name, m)).collect();
            // Name who imports whom inside the circle.
            let inside: BTreeSet<&ModPath> = c.iter().collect();
            let arrows: Vec<String> = c
                .iter()
                .flat_map(|m| edges[m].iter().filter(|t| inside.contains(t)).map(move |t| (m, t)))
                .map(|(a, b)| format!("{} -> {}", name(crate_name, a), name(crate_name, b)))
                .collect();
            found.push(format!("{crate_name}: circle through {} ({})", names.join(", "), arrows.join("; ")));
        }
    }
    assert!(modules > 60, "the walk found only {modules} modules");
    assert!(found.is_empty(), "{} import circle(s):\n{}", found.len(), found.join("\n"));
}

#[test]
fn the_apps_shared_state_and_formatting_import_no_other_plugin() {
    let edges = graph(&src().join("main.rs"));
    for leaf in ["state", "format"] {
        // The leaf and its submodules (`app::state::arm`, ...) import nothing else of the app.
        let root: ModPath = vec!["app".into(), leaf.into()];
        assert!(edges.contains_key(&root), "no app::{leaf}");
        for (m, targets) in edges.iter().filter(|(m, _)| m.starts_with(&root)) {
            let app_imports: Vec<String> = targets
                .iter()
                .filter(|t| t.first().is_some_and(|s| s == "app") && !t.starts_with(&root))
                .map(|t| t.join("::"))
                .collect();
            assert!(app_imports.is_empty(), "{} imports {app_imports:?}", m.join("::"));
        }
    }
}

#[test]
fn the_walk_sees_every_kind_of_path_and_names_a_circle() {
    // A small crate on disk: `a` and `b` import each other through a grouped `use` and a path in
    // code; `c` re-exports its child (a facade, no circle); strings and comments are not code.
    let dir = std::env::temp_dir().join(format!("elbow-imports-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("c")).unwrap();
    let files = [
        ("lib.rs", "mod a;\npub mod b;\nmod c;\n// use crate::a::X;\n"),
        ("a.rs", "use crate::{b::{self, Y as Z}, c::D};\nfn f() {}\n"),
        ("b.rs", "fn g() { let s = \"crate::c::D\"; super::a::f(); }\n#[cfg(test)]\nmod tests { use super::*; }\n"),
        // A module whose name starts like a raw byte string (`br`) is still a module.
        ("c/mod.rs", "mod brd;\npub use brd::D;\n"),
        ("c/brd.rs", "pub struct D; fn h() -> &'static str { 'x'; r#\"use crate::a;\"# }\n"),
    ];
    for (f, text) in files {
        std::fs::write(dir.join(f), text).unwrap();
    }
    let edges = graph(&dir.join("lib.rs"));
    let m = |s: &str| -> ModPath { s.split('/').filter(|p| !p.is_empty()).map(String::from).collect() };
    assert_eq!(edges.len(), 5);
    assert_eq!(edges[&m("a")], [m("b"), m("c")].into_iter().collect());
    assert_eq!(edges[&m("b")], [m("a")].into_iter().collect());
    assert!(edges[&m("c")].is_empty() && edges[&m("c/brd")].is_empty(), "{edges:?}");
    assert_eq!(circles(&edges), vec![vec![m("a"), m("b")]]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_core_imports_nothing_built_on_it() {
    // The kinematics, the solvers, the networks and the chains are what the plant, the envelope,
    // the experiments and the views are built on: none of them imports those (an "upward"
    // import). The arm value (its body is the plant's) and the line-up (a pipeline may run
    // inside the envelope) sit between and are not listed.
    let core = [
        "kinematics",
        "solver",
        "analytic",
        "iterative",
        "nn",
        "chain",
        "learned",
        "keys",
        "rng",
        "stats",
        "simd",
        "files",
    ];
    let built_on = ["plant", "envelope", "experiments", "atlas", "explain", "lessons", "bench"];
    let edges = graph(&src().join("lib.rs"));
    let mut upward = Vec::new();
    for (m, targets) in edges.iter().filter(|(m, _)| m.first().is_some_and(|top| core.contains(&top.as_str()))) {
        for t in targets.iter().filter(|t| t.first().is_some_and(|top| built_on.contains(&top.as_str()))) {
            upward.push(format!("{} -> {}", m.join("::"), t.join("::")));
        }
    }
    assert!(edges.keys().any(|m| m.first().is_some_and(|t| t == "chain")), "the walk found no chain module");
    assert!(upward.is_empty(), "{} upward import(s):\n{}", upward.len(), upward.join("\n"));
}
