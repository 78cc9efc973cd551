//! The `apply_patch` format (the "*** Begin Patch" envelope models are trained on):
//!
//! ```text
//! *** Begin Patch
//! *** Add File: path/new.txt
//! +every line of the new file, each after a '+'
//! *** Delete File: path/old.txt
//! *** Update File: path/file.py
//! *** Move to: path/renamed.py          (optional)
//! @@ def greet():                       (optional: a line to find first)
//!  context line (a space, then the line)
//! -removed line
//! +added line
//! *** End of File                       (optional: the change is at the end of the file)
//! *** End Patch
//! ```
//!
//! An update holds one or more chunks, each started by `@@` (optionally followed by a line
//! to look for; the first chunk may omit it). A chunk's context and removed lines are looked
//! for in the file, after the previous chunk: exactly, then ignoring trailing whitespace,
//! then ignoring surrounding whitespace. A chunk with only added lines is inserted after its
//! `@@` line, or at the end of the file when it has none.

/// One file operation of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Hunk {
    Add {
        path: String,
        contents: String,
    },
    Delete {
        path: String,
    },
    Update {
        path: String,
        move_to: Option<String>,
        chunks: Vec<Chunk>,
    },
}

/// One change inside an updated file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Chunk {
    /// The `@@ …` line to find before looking for `old`.
    pub anchor: Option<String>,
    /// Context and removed lines, in order.
    pub old: Vec<String>,
    /// Context and added lines, in order.
    pub new: Vec<String>,
    /// `*** End of File`: `old` is at the end of the file.
    pub at_end: bool,
}

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";

/// Parses a patch. Errors name the 1-based line of the patch.
pub(super) fn parse(patch: &str) -> Result<Vec<Hunk>, String> {
    let lines: Vec<&str> = patch.trim().lines().collect();
    let (Some(first), Some(last)) = (lines.first(), lines.last()) else {
        return Err("the patch is empty".to_owned());
    };
    if first.trim() != BEGIN {
        return Err(format!("the patch must start with '{BEGIN}'"));
    }
    if lines.len() < 2 || last.trim() != END {
        return Err(format!("the patch must end with '{END}'"));
    }
    let body = &lines[1..lines.len() - 1];
    let mut hunks = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let line = body[i];
        let number = i + 2;
        if let Some(path) = header(line, ADD) {
            let mut contents = String::new();
            i += 1;
            while let Some(next) = body.get(i) {
                if is_header(next) {
                    break;
                }
                let Some(text) = next.strip_prefix('+') else {
                    return Err(format!(
                        "line {}: every line of an added file must start with '+'",
                        i + 2
                    ));
                };
                contents.push_str(text);
                contents.push('\n');
                i += 1;
            }
            hunks.push(Hunk::Add { path, contents });
        } else if let Some(path) = header(line, DELETE) {
            hunks.push(Hunk::Delete { path });
            i += 1;
        } else if let Some(path) = header(line, UPDATE) {
            i += 1;
            let move_to = match body.get(i).and_then(|next| header(next, MOVE)) {
                Some(target) => {
                    i += 1;
                    Some(target)
                }
                None => None,
            };
            let (chunks, next) = parse_chunks(body, i)?;
            i = next;
            if chunks.is_empty() && move_to.is_none() {
                return Err(format!("line {number}: '{UPDATE}{path}' changes nothing"));
            }
            hunks.push(Hunk::Update {
                path,
                move_to,
                chunks,
            });
        } else if line.trim().is_empty() {
            i += 1;
        } else {
            return Err(format!(
                "line {number}: expected '{ADD}', '{DELETE}' or '{UPDATE}', found {:?}",
                cut(line)
            ));
        }
    }
    if hunks.is_empty() {
        return Err("the patch changes no file".to_owned());
    }
    Ok(hunks)
}

/// The chunks of an update starting at `body[start]`, and the index after them.
fn parse_chunks(body: &[&str], start: usize) -> Result<(Vec<Chunk>, usize), String> {
    let mut chunks: Vec<Chunk> = Vec::new();
    let mut current: Option<Chunk> = None;
    let mut i = start;
    while let Some(&line) = body.get(i) {
        if is_file_header(line) {
            break;
        }
        let number = i + 2;
        i += 1;
        if let Some(rest) = line.strip_prefix("@@") {
            if let Some(done) = current.take() {
                chunks.push(finished(done, number)?);
            }
            let anchor = rest.trim();
            current = Some(Chunk {
                anchor: (!anchor.is_empty()).then(|| anchor.to_owned()),
                ..Chunk::default()
            });
            continue;
        }
        if line.trim_end() == END_OF_FILE {
            match current.as_mut() {
                Some(chunk) => chunk.at_end = true,
                None => return Err(format!("line {number}: '{END_OF_FILE}' outside a chunk")),
            }
            continue;
        }
        let chunk = current.get_or_insert_with(Chunk::default);
        if chunk.at_end {
            return Err(format!(
                "line {number}: nothing may follow '{END_OF_FILE}' but a new chunk or file"
            ));
        }
        match line.chars().next() {
            // A blank line in a chunk is a blank context line (editors strip the space).
            None => {
                chunk.old.push(String::new());
                chunk.new.push(String::new());
            }
            Some(' ') => {
                chunk.old.push(line[1..].to_owned());
                chunk.new.push(line[1..].to_owned());
            }
            Some('-') => chunk.old.push(line[1..].to_owned()),
            Some('+') => chunk.new.push(line[1..].to_owned()),
            Some(_) => {
                return Err(format!(
                    "line {number}: a chunk line must start with ' ', '-' or '+', found {:?}",
                    cut(line)
                ));
            }
        }
    }
    if let Some(done) = current {
        chunks.push(finished(done, i + 2)?);
    }
    Ok((chunks, i))
}

fn finished(chunk: Chunk, number: usize) -> Result<Chunk, String> {
    if chunk.old.is_empty() && chunk.new.is_empty() {
        return Err(format!("line {number}: an empty chunk"));
    }
    Ok(chunk)
}

fn header(line: &str, prefix: &str) -> Option<String> {
    let path = line.strip_prefix(prefix)?.trim();
    (!path.is_empty()).then(|| path.to_owned())
}

fn is_file_header(line: &str) -> bool {
    line.starts_with(ADD) || line.starts_with(DELETE) || line.starts_with(UPDATE)
}

fn is_header(line: &str) -> bool {
    is_file_header(line) || line.starts_with(MOVE)
}

fn cut(line: &str) -> String {
    line.chars().take(80).collect()
}

/// Applies an update's chunks to a file's text. `name` is the path for error messages.
pub(super) fn apply(original: &str, chunks: &[Chunk], name: &str) -> Result<String, String> {
    let had_final_newline = original.is_empty() || original.ends_with('\n');
    let mut lines: Vec<String> = original.lines().map(str::to_owned).collect();
    // (start, old length, new lines), in file order.
    let mut replacements: Vec<(usize, usize, Vec<String>)> = Vec::new();
    let mut cursor = 0;
    for (index, chunk) in chunks.iter().enumerate() {
        let number = index + 1;
        if let Some(anchor) = &chunk.anchor {
            let found =
                seek(&lines, std::slice::from_ref(anchor), cursor, false).ok_or_else(|| {
                    format!("{name}: chunk {number}: could not find the line '@@ {anchor}'")
                })?;
            cursor = found + 1;
        }
        if chunk.old.is_empty() {
            let at = if chunk.anchor.is_some() {
                cursor
            } else {
                lines.len()
            };
            replacements.push((at, 0, chunk.new.clone()));
            continue;
        }
        let mut old: &[String] = &chunk.old;
        let mut new: &[String] = &chunk.new;
        let mut found = seek(&lines, old, cursor, chunk.at_end);
        // A trailing blank context line often stands for the file's final newline.
        if found.is_none() && old.last().is_some_and(String::is_empty) {
            old = &old[..old.len() - 1];
            if new.last().is_some_and(String::is_empty) {
                new = &new[..new.len() - 1];
            }
            found = seek(&lines, old, cursor, chunk.at_end);
        }
        let Some(start) = found else {
            let expected: Vec<&str> = chunk.old.iter().take(3).map(String::as_str).collect();
            return Err(format!(
                "{name}: chunk {number}: could not find the lines to change (starting {:?}); \
                 context and '-' lines must match the file, read it again",
                expected.join("\n")
            ));
        };
        replacements.push((start, old.len(), new.to_vec()));
        cursor = start + old.len();
    }
    // Additions at the end come first in chunk order but last in the file.
    replacements.sort_by_key(|(start, _, _)| *start);
    for (start, len, new) in replacements.into_iter().rev() {
        lines.splice(start..start + len, new);
    }
    let mut text = lines.join("\n");
    if had_final_newline && !lines.is_empty() {
        text.push('\n');
    }
    Ok(text)
}

/// Where `pattern` occurs in `lines` at or after `from`: exactly, then ignoring trailing
/// whitespace, then ignoring surrounding whitespace. `at_end` tries the end of the file
/// first.
fn seek(lines: &[String], pattern: &[String], from: usize, at_end: bool) -> Option<usize> {
    if pattern.len() > lines.len() {
        return None;
    }
    let last_start = lines.len() - pattern.len();
    let compare: [fn(&str, &str) -> bool; 3] = [
        |a, b| a == b,
        |a, b| a.trim_end() == b.trim_end(),
        |a, b| a.trim() == b.trim(),
    ];
    for equal in compare {
        let matches_at = |start: usize| {
            lines[start..start + pattern.len()]
                .iter()
                .zip(pattern)
                .all(|(line, want)| equal(line, want))
        };
        if at_end && last_start >= from && matches_at(last_start) {
            return Some(last_start);
        }
        if let Some(start) = (from..=last_start).find(|start| matches_at(*start)) {
            return Some(start);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_hunk_kind() {
        let patch = "*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** Delete File: b.txt\n\
                     *** Update File: c.py\n*** Move to: d.py\n@@ def f():\n-    return 1\n\
                     +    return 2\n*** End of File\n*** End Patch\n";
        let hunks = parse(patch).unwrap();
        assert_eq!(
            hunks,
            vec![
                Hunk::Add {
                    path: "a.txt".into(),
                    contents: "one\ntwo\n".into()
                },
                Hunk::Delete {
                    path: "b.txt".into()
                },
                Hunk::Update {
                    path: "c.py".into(),
                    move_to: Some("d.py".into()),
                    chunks: vec![Chunk {
                        anchor: Some("def f():".into()),
                        old: vec!["    return 1".into()],
                        new: vec!["    return 2".into()],
                        at_end: true,
                    }],
                },
            ]
        );
    }

    #[test]
    fn refuses_malformed_patches() {
        assert!(parse("").is_err());
        assert!(parse("*** Add File: a\n+x\n*** End Patch").is_err());
        assert!(parse("*** Begin Patch\n*** Add File: a\n+x").is_err());
        assert!(parse("*** Begin Patch\n*** Add File: a\nx\n*** End Patch").is_err());
        assert!(parse("*** Begin Patch\nhello\n*** End Patch").is_err());
        assert!(parse("*** Begin Patch\n*** Update File: a\n*** End Patch").is_err());
        assert!(parse("*** Begin Patch\n*** Update File: a\n@@\n?x\n*** End Patch").is_err());
        assert!(parse("*** Begin Patch\n*** End Patch").is_err());
    }

    fn chunk(old: &[&str], new: &[&str]) -> Chunk {
        Chunk {
            old: old.iter().map(|s| (*s).to_owned()).collect(),
            new: new.iter().map(|s| (*s).to_owned()).collect(),
            ..Chunk::default()
        }
    }

    #[test]
    fn applies_chunks_in_order() {
        let text = "a\nb\nc\nb\nd\n";
        let out = apply(
            text,
            &[chunk(&["c", "b"], &["c", "B"]), chunk(&["d"], &["D", "E"])],
            "f",
        )
        .unwrap();
        assert_eq!(out, "a\nb\nc\nB\nD\nE\n");
        // Whitespace-tolerant matching, and pure additions at the end.
        let out = apply(
            "x  \ny\n",
            &[chunk(&["x"], &["X"]), chunk(&[], &["z"])],
            "f",
        )
        .unwrap();
        assert_eq!(out, "X\ny\nz\n");
        // No final newline stays without one.
        assert_eq!(
            apply("a\nb", &[chunk(&["b"], &["c"])], "f").unwrap(),
            "a\nc"
        );
        assert!(apply("a\n", &[chunk(&["zzz"], &["y"])], "f").is_err());
    }

    #[test]
    fn anchors_and_end_of_file() {
        let text = "def f():\n    return 1\ndef g():\n    return 1\n";
        let mut change = chunk(&["    return 1"], &["    return 2"]);
        change.anchor = Some("def g():".into());
        let out = apply(text, &[change], "f").unwrap();
        assert_eq!(out, "def f():\n    return 1\ndef g():\n    return 2\n");
        let mut end = chunk(&["x"], &["y"]);
        end.at_end = true;
        assert_eq!(apply("x\nx\n", &[end], "f").unwrap(), "x\ny\n");
    }
}
