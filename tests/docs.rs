//! The README and the chapters in `docs/` hold together: every relative link and image resolves
//! to a file that exists, every `#anchor` into a markdown file names one of its headings (GitHub's
//! slug rule), every chapter is reachable from the README, and the README stays short enough to
//! read in five minutes (at most 300 lines).

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The README's line budget.
const README_MAX_LINES: usize = 300;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every `docs/*.md`, sorted.
fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|entry| entry.expect("a readable docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    assert!(!docs.is_empty(), "docs/ holds no chapter");
    files.extend(docs);
    files
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The lines of a markdown text outside fenced code blocks, with their line numbers (from 1).
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = if trimmed.starts_with("```") {
            Some("```")
        } else if trimmed.starts_with("~~~") {
            Some("~~~")
        } else {
            None
        };
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m)) if open == m => fence = None,
            (None, None) => lines.push((i + 1, line)),
            _ => {}
        }
    }
    lines
}

/// A line with its inline code spans blanked out (so `[a](b)` inside backticks is no link).
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let after = &rest[start + ticks..];
        let closing = "`".repeat(ticks);
        match after.find(&closing) {
            Some(end) => {
                out.push('x');
                rest = &after[end + ticks..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of every markdown link and image on a line: the text between `](` and its
/// matching `)`, without an optional title or angle brackets.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut targets = Vec::new();
    let mut from = 0;
    while let Some(pos) = line[from..].find("](") {
        let start = from + pos + 2;
        let mut depth = 1;
        let mut end = None;
        for (i, c) in line[start..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(start + i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else { break };
        let target = line[start..end].trim();
        let target = target.split_once(" \"").map_or(target, |(t, _)| t).trim();
        let target = target.strip_prefix('<').and_then(|t| t.strip_suffix('>')).unwrap_or(target);
        targets.push(target.to_string());
        from = end + 1;
    }
    targets
}

/// GitHub's anchor for a heading's text: lowercase, every character but letters, digits, `-`,
/// `_` and spaces dropped, spaces turned into `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|&c| c.is_alphanumeric() || c == '-' || c == '_' || c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor a markdown file's headings make, repeated headings numbered `-1`, `-2`, ... as
/// GitHub numbers them.
fn anchors(text: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(line[hashes..].trim_end_matches('#'));
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

fn is_external(target: &str) -> bool {
    let lower = target.to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("mailto:")
}

/// Every broken relative link of the README and the chapters, as `file:line: why`.
fn broken_links() -> Vec<String> {
    let mut broken = Vec::new();
    for file in markdown_files() {
        let text = read(&file);
        let name = file.strip_prefix(root()).unwrap_or(&file).display().to_string();
        let dir = file.parent().expect("a file has a folder");
        for (number, line) in prose_lines(&text) {
            for target in link_targets(line) {
                if target.is_empty() {
                    broken.push(format!("{name}:{number}: an empty link target"));
                    continue;
                }
                if is_external(&target) {
                    continue;
                }
                let (path, anchor) = match target.split_once('#') {
                    Some((path, anchor)) => (path, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let resolved = if path.is_empty() { file.clone() } else { dir.join(path) };
                if !resolved.is_file() {
                    broken.push(format!("{name}:{number}: `{target}`: no file {}", resolved.display()));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if resolved.extension().is_some_and(|ext| ext == "md") && !anchors(&read(&resolved)).contains(anchor) {
                    broken.push(format!("{name}:{number}: `{target}`: no heading with the anchor #{anchor}"));
                }
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_and_anchor_in_the_readme_and_the_chapters_resolves() {
    let broken = broken_links();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_is_at_most_300_lines() {
    let lines = read(&root().join("README.md")).lines().count();
    assert!(lines <= README_MAX_LINES, "README.md has {lines} lines; at most {README_MAX_LINES}");
}

#[test]
fn the_readme_links_every_chapter() {
    let readme = read(&root().join("README.md"));
    let linked: HashSet<String> = prose_lines(&readme).into_iter().flat_map(|(_, line)| link_targets(line)).collect();
    for chapter in markdown_files().into_iter().skip(1) {
        let name = format!("docs/{}", chapter.file_name().expect("a file name").to_string_lossy());
        assert!(linked.contains(&name), "README.md does not link {name}");
    }
}

#[test]
fn the_checker_reads_links_anchors_and_code_as_github_does() {
    assert_eq!(
        slug("The plant: servos, inertia, and MuJoCo as the referee"),
        "the-plant-servos-inertia-and-mujoco-as-the-referee"
    );
    assert_eq!(slug("`--arm`: solve, train and map a redundant chain"), "--arm-solve-train-and-map-a-redundant-chain");
    assert_eq!(slug("Bishop 1994: the MDN paper's arm"), "bishop-1994-the-mdn-papers-arm");
    assert_eq!(
        link_targets("see ![a (b)](../assets/x.png) and [c](d.md#e) but not `[f](g)`"),
        vec!["../assets/x.png", "d.md#e"]
    );
    let text = "# A\n\n```sh\n# not a heading\n```\n\n## A\n";
    let found = anchors(text);
    assert!(found.contains("a") && found.contains("a-1") && !found.contains("not-a-heading"), "{found:?}");
}
