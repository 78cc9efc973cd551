//! Where things are written: the answer (and its sources) on stdout, progress on stderr. A
//! terminal gets colour and a spinner; a pipe gets plain lines, without one escape code. Colour
//! also stays off with `NO_COLOR` set or `TERM=dumb`.

use std::io::{IsTerminal as _, Write};

use anstyle::{AnsiColor, Style};

use crate::render::{Citation, sanitize};

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// Erases the current line of a terminal.
const CLEAR_LINE: &str = "\r\x1b[2K";

/// The two output streams of a session and what is on them.
pub(crate) struct Terminal {
    /// Stdout is a terminal: the answer is cleaned of control characters.
    stdout_tty: bool,
    /// Stderr is a terminal with colour allowed: styles and the spinner.
    fancy: bool,
    /// `--json`: the answer text is not written (the response object is, at the end).
    json: bool,
    /// The answer's current line is not finished yet.
    answer_open: bool,
    /// The spinner is on screen (stderr's current line).
    spinning: bool,
    frame: usize,
}

fn style(fancy: bool, style: Style, text: &str) -> String {
    if fancy {
        format!("{style}{text}{style:#}")
    } else {
        text.to_owned()
    }
}

const DIM: Style = Style::new().dimmed();
const ERROR: Style = AnsiColor::Red.on_default().bold();
const PROMPT: Style = AnsiColor::Yellow.on_default().bold();
const BOLD: Style = Style::new().bold();

impl Terminal {
    pub(crate) fn new(json: bool) -> Terminal {
        let colour_allowed = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            && std::env::var_os("TERM").is_none_or(|term| term != "dumb");
        Terminal {
            stdout_tty: std::io::stdout().is_terminal(),
            fancy: std::io::stderr().is_terminal() && colour_allowed,
            json,
            answer_open: false,
            spinning: false,
            frame: 0,
        }
    }

    fn clear_spinner(&mut self) -> std::io::Result<()> {
        if self.spinning {
            self.spinning = false;
            let mut err = std::io::stderr().lock();
            write!(err, "{CLEAR_LINE}")?;
            err.flush()?;
        }
        Ok(())
    }

    /// Ends the answer's open line on a terminal, so a progress line starts on its own.
    fn break_answer_line(&mut self) -> std::io::Result<()> {
        if self.answer_open && self.stdout_tty {
            let mut out = std::io::stdout().lock();
            writeln!(out)?;
            out.flush()?;
            self.answer_open = false;
        }
        Ok(())
    }

    /// A piece of the answer, as written.
    pub(crate) fn text(&mut self, delta: &str) -> std::io::Result<()> {
        if self.json || delta.is_empty() {
            return Ok(());
        }
        self.clear_spinner()?;
        let delta = if self.stdout_tty {
            sanitize(delta, true)
        } else {
            delta.to_owned()
        };
        let mut out = std::io::stdout().lock();
        out.write_all(delta.as_bytes())?;
        out.flush()?;
        self.answer_open = !delta.ends_with('\n');
        Ok(())
    }

    /// Finishes the answer with a newline (if it has an open line).
    pub(crate) fn end_answer(&mut self) -> std::io::Result<()> {
        self.clear_spinner()?;
        if self.answer_open {
            let mut out = std::io::stdout().lock();
            writeln!(out)?;
            out.flush()?;
            self.answer_open = false;
        }
        Ok(())
    }

    /// A progress line on stderr.
    pub(crate) fn step(&mut self, line: &str) -> std::io::Result<()> {
        self.clear_spinner()?;
        self.break_answer_line()?;
        let line = style(self.fancy, DIM, &format!("· {line}"));
        writeln!(std::io::stderr().lock(), "{line}")
    }

    /// An error line on stderr.
    pub(crate) fn error(&mut self, line: &str) -> std::io::Result<()> {
        self.clear_spinner()?;
        self.break_answer_line()?;
        let label = style(self.fancy, ERROR, "error:");
        writeln!(std::io::stderr().lock(), "{label} {line}")
    }

    /// A question to the user on stderr (without a newline).
    pub(crate) fn prompt(&mut self, title: &str, question: &str) -> std::io::Result<()> {
        self.clear_spinner()?;
        self.break_answer_line()?;
        let mut err = std::io::stderr().lock();
        if !title.is_empty() {
            writeln!(err, "{}", style(self.fancy, PROMPT, title))?;
        }
        write!(err, "{question}")?;
        err.flush()
    }

    /// Advances the spinner (terminals only, and not while the answer's line is open).
    pub(crate) fn tick(&mut self, label: &str) -> std::io::Result<()> {
        if !self.fancy || self.answer_open {
            return Ok(());
        }
        self.frame = (self.frame + 1) % SPINNER.len();
        let mut err = std::io::stderr().lock();
        write!(
            err,
            "{CLEAR_LINE}{} {}",
            SPINNER[self.frame],
            style(true, DIM, label)
        )?;
        err.flush()?;
        self.spinning = true;
        Ok(())
    }

    /// Whether the spinner is worth ticking.
    pub(crate) fn animates(&self) -> bool {
        self.fancy
    }

    /// The cited sources, numbered, on stdout after the answer.
    pub(crate) fn sources(&mut self, citations: &[Citation]) -> std::io::Result<()> {
        if self.json || citations.is_empty() {
            return Ok(());
        }
        self.end_answer()?;
        let mut out = std::io::stdout().lock();
        let fancy = self.stdout_tty && self.fancy;
        writeln!(out)?;
        writeln!(out, "{}", style(fancy, BOLD, "Sources:"))?;
        for citation in citations {
            let title = if citation.title.is_empty() {
                String::new()
            } else {
                format!("{} ", citation.title)
            };
            writeln!(out, "[{}] {title}{}", citation.number, citation.url)?;
        }
        out.flush()
    }

    /// `--json`: the final response object on stdout.
    pub(crate) fn json(&mut self, response: &serde_json::Value) -> std::io::Result<()> {
        self.clear_spinner()?;
        let text = serde_json::to_string_pretty(response).map_err(std::io::Error::other)?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "{text}")?;
        out.flush()
    }
}
