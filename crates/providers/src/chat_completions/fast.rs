//! The fast path for the chunks a streamed Chat Completions turn is made of.
//!
//! serde_json spends ~14 instructions per byte tokenizing a chunk into [`Chunk`] (each short key
//! a `parse_str`, a `has_next_key` and a field match; docs/benchmarks.md, "fourth pass"), ~5 k
//! per 250-byte delta chunk. Here the same text is read in one pass over its bytes: the fields
//! [`Chunk`] models are read into the very same types, every other field is skipped with its
//! grammar checked as serde's `IgnoredAny` checks it (strings eight bytes at a time).
//!
//! Anything this path does not take makes it answer `None`, and the caller decodes the same
//! text with serde as before: a key written with escapes, a repeated known key, a value of
//! another type than the common one (`logprobs` or `error` not `null`, an index that is not a
//! plain small integer, a struct written as an array), a string with a lone surrogate, nesting
//! deeper than 64, malformed JSON. Whatever this path returns is what serde returns, and every
//! error still comes from serde.
//!
//! The fields of the chunk, its first choice and that choice's delta are read into data
//! ([`ChunkFields`], [`ChoiceFields`], [`DeltaFields`]), not closures, so that the reader's
//! state where the first choice's text begins can be kept ([`Mark`]) and the reading resumed
//! there ([`after_text`]) for a chunk whose bytes up to that point are the same (`repeat.rs`).

use super::wire::{
    Chunk, ChunkChoice, CompletionTokensDetails, Delta, ExtraContent, FunctionDelta, GoogleExtra,
    PromptTokensDetails, ToolCallDelta, Usage,
};

/// The chunk `data` holds, or `None`: not read by this path (then serde reads it). With it, where
/// its first choice's text is, when it has one (what `repeat.rs` resumes from).
pub(super) fn chunk(data: &str) -> (Option<Chunk>, Option<Mark>) {
    let mut reader = Reader::new(data, 0);
    let chunk = reader
        .chunk()
        .and_then(|chunk| reader.end().then_some(chunk));
    let mark = reader.mark.take().filter(|_| chunk.is_some());
    (chunk, mark)
}

/// Where a chunk's first choice's text (the value of `choices[0].delta.content`) is, and the
/// reader's state there.
#[derive(Debug)]
pub(super) struct Mark {
    /// Just after the text's key and its colon.
    pub(super) at: usize,
    /// Just after the text's value (`null` included).
    pub(super) end: usize,
    pub(super) state: AtText,
}

/// What the reader holds when it reaches the first choice's text: the fields read so far of
/// the three objects it is in (the chunk, the first choice, its delta). Reading from there on
/// with this state is reading the whole chunk, from the same point.
#[derive(Debug, Clone)]
pub(super) struct AtText {
    chunk: ChunkFields,
    choice: ChoiceFields,
    delta: DeltaFields,
}

/// The text value at `at` in `data` (as the first choice's text is read) and where it ends, or
/// `None`: not read by this path.
pub(super) fn text_at(data: &str, at: usize) -> Option<(Option<String>, usize)> {
    let mut reader = Reader::new(data, at);
    let text = reader.text()?;
    Some((text, reader.at))
}

/// The text at `at` in `data` when it is a string without escapes that begins right there
/// (the usual text), and where it ends: what [`text_at`] reads there, without its steps for
/// `null`, whitespace and escapes; `None` for anything else (then [`text_at`] reads it).
pub(super) fn plain_text_at(data: &str, at: usize) -> Option<(&str, usize)> {
    let end = plain_text_end(data.as_bytes(), at)?;
    Some((data.get(at + 1..end)?, end + 1))
}

/// Where the string without escapes that begins at `at` in `bytes` ends (its closing quote), or
/// `None` when there is none there: [`plain_text_at`] over bytes, for a caller that checks the
/// text's bytes to be UTF-8 itself.
pub(super) fn plain_text_end(bytes: &[u8], at: usize) -> Option<usize> {
    if *bytes.get(at)? != b'"' {
        return None;
    }
    let end = special(bytes, at + 1);
    (*bytes.get(end)? == b'"').then_some(end)
}

/// The first position from `at` on in `bytes` of a quote, a backslash or a control character
/// (the bytes that end a string's plain run), or the length of `bytes`.
fn special(bytes: &[u8], mut at: usize) -> usize {
    while let Some(word) = bytes.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        let word = u64::from_le_bytes(*word);
        let found = zeros(word ^ splat(b'"')) | zeros(word ^ splat(b'\\')) | below(word, 0x20);
        if found != 0 {
            return at + (found.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while let Some(&byte) = bytes.get(at) {
        if byte == b'"' || byte == b'\\' || byte < 0x20 {
            break;
        }
        at += 1;
    }
    at
}

/// The rest of the chunk `data` after its first choice's text (`text`, ending at `end`), the
/// reader being in `state` at the text: what [`chunk`] reads from the same point.
pub(super) fn after_text(
    data: &str,
    end: usize,
    state: AtText,
    text: Option<String>,
) -> Option<Chunk> {
    let mut reader = Reader::new(data, end);
    let chunk = reader.after_text(state, text)?;
    reader.end().then_some(chunk)
}

/// A JSON text being read, and how far.
struct Reader<'a> {
    text: &'a str,
    at: usize,
    /// Set when the first choice's text is reached.
    mark: Option<Mark>,
}

/// Eight copies of a byte, for the eight-at-a-time string scan.
const fn splat(byte: u8) -> u64 {
    u64::from_ne_bytes([byte; 8])
}

const ONES: u64 = splat(0x01);
const HIGHS: u64 = splat(0x80);

/// The high bit of each byte of `word` below `limit` (`limit` ≤ 0x80); exact up to the first
/// such byte (a borrow may mark bytes after it).
const fn below(word: u64, limit: u8) -> u64 {
    word.wrapping_sub(splat(limit)) & !word & HIGHS
}

/// The high bit of each zero byte of `word`, exact up to the first one.
const fn zeros(word: u64) -> u64 {
    word.wrapping_sub(ONES) & !word & HIGHS
}

/// The most containers a skipped value may nest (one bit each).
const MAX_DEPTH: u32 = 64;

impl<'a> Reader<'a> {
    fn new(text: &'a str, at: usize) -> Self {
        Reader {
            text,
            at,
            mark: None,
        }
    }

    /// Whether only whitespace is left.
    fn end(&mut self) -> bool {
        self.whitespace();
        self.at == self.text.len()
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn byte(&self, at: usize) -> Option<u8> {
        self.bytes().get(at).copied()
    }

    /// JSON's four whitespace characters, as serde_json skips them.
    fn whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.byte(self.at) {
            self.at += 1;
        }
    }

    /// The next byte after whitespace, not consumed.
    fn peek(&mut self) -> Option<u8> {
        self.whitespace();
        self.byte(self.at)
    }

    /// Consumes `byte`, the next after whitespace.
    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// Consumes `word` (`null`, `true`, `false`), the next after whitespace.
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.whitespace();
        let end = self.at + word.len();
        (self.bytes().get(self.at..end)? == word).then(|| self.at = end)
    }

    /// The first position from `at` on of a quote, a backslash or a control character (the
    /// bytes that end a string's plain run), or the text's length.
    fn special(&self, at: usize) -> usize {
        special(self.bytes(), at)
    }

    /// The four hex digits at `at` (`\u` escape), either case.
    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.bytes().get(at..at + 4)?;
        digits.iter().try_fold(0, |value, &digit| {
            Some(value << 4 | char::from(digit).to_digit(16)?)
        })
    }

    /// An object key without escapes (a key with escapes is declined), and its colon.
    fn key(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.at;
        let end = self.special(start);
        if self.byte(end)? != b'"' {
            return None;
        }
        self.at = end + 1;
        self.eat(b':')?;
        self.bytes().get(start..end)
    }

    /// Reads an object: `field` is called with each key and must read its value.
    fn object(&mut self, mut field: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        let key = self.key()?;
        field(self, key)?;
        self.object_rest(field)
    }

    /// The rest of an object after one of its values.
    fn object_rest(
        &mut self,
        mut field: impl FnMut(&mut Self, &'a [u8]) -> Option<()>,
    ) -> Option<()> {
        loop {
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
            let key = self.key()?;
            field(self, key)?;
        }
    }

    /// Reads an array, each element with `element`.
    fn array<T>(&mut self, element: impl Fn(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        self.eat(b'[')?;
        let mut elements = Vec::new();
        if self.peek()? == b']' {
            self.at += 1;
            return Some(elements);
        }
        elements.push(element(self)?);
        self.array_rest(elements, element)
    }

    /// The rest of an array after its `elements` so far.
    fn array_rest<T>(
        &mut self,
        mut elements: Vec<T>,
        element: impl Fn(&mut Self) -> Option<T>,
    ) -> Option<Vec<T>> {
        loop {
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Some(elements);
                }
                _ => return None,
            }
            elements.push(element(self)?);
        }
    }

    /// `null` as `None`, anything else read by `value` (serde's `Option`).
    fn option<T>(&mut self, value: impl FnOnce(&mut Self) -> Option<T>) -> Option<Option<T>> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            return Some(None);
        }
        value(self).map(Some)
    }

    /// A non-negative integer of at most `max_digits` digits, as serde reads it into an
    /// unsigned type (a sign, a fraction or an exponent is declined: serde refuses some).
    fn unsigned(&mut self, max_digits: usize) -> Option<u64> {
        self.whitespace();
        let start = self.at;
        match self.byte(start)? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.at - start > max_digits
            || matches!(self.byte(self.at), Some(b'0'..=b'9' | b'.' | b'e' | b'E'))
        {
            return None;
        }
        self.bytes()
            .get(start..self.at)?
            .iter()
            .try_fold(0u64, |value, &digit| {
                value.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
            })
    }

    /// An integer read as a `u32` (at most nine digits).
    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.unsigned(9)?).ok()
    }

    /// An integer read as a `usize` (at most nine digits).
    fn usize(&mut self) -> Option<usize> {
        usize::try_from(self.unsigned(9)?).ok()
    }

    /// An integer read as a `u64` (at most 19 digits).
    fn u64(&mut self) -> Option<u64> {
        self.unsigned(19)
    }

    /// Skips digits.
    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.byte(self.at) {
            self.at += 1;
        }
    }

    /// Skips at least one digit.
    fn some_digits(&mut self) -> Option<()> {
        let start = self.at;
        self.digits();
        (self.at > start).then_some(())
    }

    /// Skips a number with serde_json's grammar (`ignore_integer`).
    fn skip_number(&mut self) -> Option<()> {
        if self.byte(self.at) == Some(b'-') {
            self.at += 1;
        }
        match self.byte(self.at)? {
            b'0' => {
                self.at += 1;
                if let Some(b'0'..=b'9') = self.byte(self.at) {
                    return None;
                }
            }
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.byte(self.at) == Some(b'.') {
            self.at += 1;
            self.some_digits()?;
        }
        if let Some(b'e' | b'E') = self.byte(self.at) {
            self.at += 1;
            if let Some(b'+' | b'-') = self.byte(self.at) {
                self.at += 1;
            }
            self.some_digits()?;
        }
        Some(())
    }

    /// A string read into a `String`, escapes decoded as serde decodes them (a lone surrogate,
    /// which serde refuses, is declined).
    fn string(&mut self) -> Option<String> {
        self.eat(b'"')?;
        let start = self.at;
        let end = self.special(start);
        match self.byte(end)? {
            b'"' => {
                self.at = end + 1;
                self.text.get(start..end).map(str::to_owned)
            }
            b'\\' => self.escaped(start, end),
            _ => None,
        }
    }

    /// The rest of a string from its first escape (at `at`; the plain run from `start`).
    fn escaped(&mut self, start: usize, mut at: usize) -> Option<String> {
        let mut text = String::from(self.text.get(start..at)?);
        loop {
            let escape = self.byte(at + 1)?;
            at += 2;
            text.push(match escape {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                b'u' => {
                    let unit = self.hex4(at)?;
                    at += 4;
                    match unit {
                        0xD800..=0xDBFF => {
                            if self.bytes().get(at..at + 2)? != b"\\u" {
                                return None;
                            }
                            let low = self.hex4(at + 2)?;
                            if !(0xDC00..=0xDFFF).contains(&low) {
                                return None;
                            }
                            at += 6;
                            char::from_u32(0x1_0000 + ((unit - 0xD800) << 10) + (low - 0xDC00))?
                        }
                        unit => char::from_u32(unit)?,
                    }
                }
                _ => return None,
            });
            let end = self.special(at);
            text.push_str(self.text.get(at..end)?);
            match self.byte(end)? {
                b'"' => {
                    self.at = end + 1;
                    return Some(text);
                }
                b'\\' => at = end,
                _ => return None,
            }
        }
    }

    /// Skips a string, its escapes checked as serde's `ignore_str` checks them (a lone
    /// surrogate is fine there).
    fn skip_string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        let mut at = self.at;
        loop {
            let end = self.special(at);
            match self.byte(end)? {
                b'"' => {
                    self.at = end + 1;
                    return Some(());
                }
                b'\\' => match self.byte(end + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => at = end + 2,
                    b'u' => {
                        self.hex4(end + 2)?;
                        at = end + 6;
                    }
                    _ => return None,
                },
                _ => return None,
            }
        }
    }

    /// Skips any value, checking its grammar as serde's `IgnoredAny` does (keys of skipped
    /// objects may hold escapes).
    fn skip_value(&mut self) -> Option<()> {
        // One bit per open container, set for an object; the innermost is the lowest.
        let mut open: u64 = 0;
        let mut depth = 0;
        loop {
            match self.peek()? {
                b'"' => self.skip_string()?,
                b'n' => self.literal(b"null")?,
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'-' | b'0'..=b'9' => self.skip_number()?,
                container @ (b'[' | b'{') => {
                    if depth == MAX_DEPTH {
                        return None;
                    }
                    self.at += 1;
                    let object = container == b'{';
                    let close = if object { b'}' } else { b']' };
                    if self.peek()? != close {
                        open = open << 1 | u64::from(object);
                        depth += 1;
                        if object {
                            self.skip_key()?;
                        }
                        continue;
                    }
                    self.at += 1;
                }
                _ => return None,
            }
            // After a value: the containers it closes, then the next element or key.
            loop {
                if depth == 0 {
                    return Some(());
                }
                let object = open & 1 == 1;
                match self.peek()? {
                    b',' => {
                        self.at += 1;
                        if object {
                            self.skip_key()?;
                        }
                        break;
                    }
                    b'}' if object => {}
                    b']' if !object => {}
                    _ => return None,
                }
                self.at += 1;
                open >>= 1;
                depth -= 1;
            }
        }
    }

    /// Skips a key of a skipped object and its colon.
    fn skip_key(&mut self) -> Option<()> {
        if self.peek()? != b'"' {
            return None;
        }
        self.skip_string()?;
        self.eat(b':')
    }

    /// `null` (`error` and `logprobs` are taken only when `null`).
    fn null(&mut self) -> Option<()> {
        self.literal(b"null")
    }

    fn chunk(&mut self) -> Option<Chunk> {
        let mut fields = ChunkFields::default();
        self.object(|reader, key| fields.field(reader, key))?;
        Some(fields.finish())
    }

    /// `choices`: the first choice read knowing the chunk's fields so far (`chunk`), so that
    /// its text can be marked.
    fn choices(&mut self, chunk: &ChunkFields) -> Option<Vec<ChunkChoice>> {
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.at += 1;
            return Some(Vec::new());
        }
        let first = self.choice(Some(chunk))?;
        self.array_rest(vec![first], |reader| reader.choice(None))
    }

    /// A choice; `chunk` for the first one (its text is marked).
    fn choice(&mut self, chunk: Option<&ChunkFields>) -> Option<ChunkChoice> {
        let mut fields = ChoiceFields::default();
        self.object(|reader, key| fields.field(reader, key, chunk))?;
        Some(fields.finish())
    }

    /// A delta; `outer` for the first choice's (its text is marked).
    fn delta(&mut self, outer: Option<(&ChunkFields, &ChoiceFields)>) -> Option<Delta> {
        let mut fields = DeltaFields::default();
        self.object(|reader, key| fields.field(reader, key, outer))?;
        Some(fields.finish())
    }

    /// A delta's text (`content`).
    fn text(&mut self) -> Option<Option<String>> {
        self.option(Self::string)
    }

    /// What [`Reader::chunk`] does after the first choice's text (`text`), in `state`.
    fn after_text(&mut self, state: AtText, text: Option<String>) -> Option<Chunk> {
        let AtText {
            chunk: mut chunk_fields,
            choice: mut choice_fields,
            delta: mut delta_fields,
        } = state;
        delta_fields.content = Some(text);
        self.object_rest(|reader, key| delta_fields.field(reader, key, None))?;
        choice_fields.delta = Some(Some(delta_fields.finish()));
        self.object_rest(|reader, key| choice_fields.field(reader, key, None))?;
        let choices =
            self.array_rest(vec![choice_fields.finish()], |reader| reader.choice(None))?;
        chunk_fields.choices = Some(choices);
        self.object_rest(|reader, key| chunk_fields.field(reader, key))?;
        Some(chunk_fields.finish())
    }

    fn tool_call(&mut self) -> Option<ToolCallDelta> {
        let mut index = None;
        let mut id = None;
        let mut function = None;
        let mut extra_content = None;
        self.object(|reader, key| {
            match key {
                b"index" if index.is_none() => index = Some(reader.option(Self::usize)?),
                b"id" if id.is_none() => id = Some(reader.option(Self::string)?),
                b"function" if function.is_none() => {
                    function = Some(reader.option(Self::function)?);
                }
                b"extra_content" if extra_content.is_none() => {
                    extra_content = Some(reader.option(Self::extra_content)?);
                }
                b"index" | b"id" | b"function" | b"extra_content" => return None,
                _ => reader.skip_value()?,
            }
            Some(())
        })?;
        Some(ToolCallDelta {
            index: index.flatten(),
            id: id.flatten(),
            function: function.flatten(),
            extra_content: extra_content.flatten(),
        })
    }

    fn function(&mut self) -> Option<FunctionDelta> {
        let mut name = None;
        let mut arguments = None;
        self.object(|reader, key| {
            match key {
                b"name" if name.is_none() => name = Some(reader.option(Self::string)?),
                b"arguments" if arguments.is_none() => {
                    arguments = Some(reader.option(Self::string)?);
                }
                b"name" | b"arguments" => return None,
                _ => reader.skip_value()?,
            }
            Some(())
        })?;
        Some(FunctionDelta {
            name: name.flatten(),
            arguments: arguments.flatten(),
        })
    }

    fn extra_content(&mut self) -> Option<ExtraContent<String>> {
        let mut google = None;
        self.object(|reader, key| {
            match key {
                b"google" if google.is_none() => google = Some(reader.option(Self::google)?),
                b"google" => return None,
                _ => reader.skip_value()?,
            }
            Some(())
        })?;
        Some(ExtraContent {
            google: google.flatten(),
        })
    }

    fn google(&mut self) -> Option<GoogleExtra<String>> {
        let mut thought_signature = None;
        self.object(|reader, key| {
            match key {
                b"thought_signature" if thought_signature.is_none() => {
                    thought_signature = Some(reader.option(Self::string)?);
                }
                b"thought_signature" => return None,
                _ => reader.skip_value()?,
            }
            Some(())
        })?;
        Some(GoogleExtra {
            thought_signature: thought_signature.flatten(),
        })
    }

    fn usage(&mut self) -> Option<Usage> {
        let mut prompt_tokens = None;
        let mut completion_tokens = None;
        let mut prompt_details = None;
        let mut completion_details = None;
        self.object(|reader, key| {
            match key {
                b"prompt_tokens" if prompt_tokens.is_none() => prompt_tokens = Some(reader.u64()?),
                b"completion_tokens" if completion_tokens.is_none() => {
                    completion_tokens = Some(reader.u64()?);
                }
                b"prompt_tokens_details" if prompt_details.is_none() => {
                    prompt_details = Some(reader.option(|reader| {
                        Some(PromptTokensDetails {
                            cached_tokens: reader.count("cached_tokens")?,
                        })
                    })?);
                }
                b"completion_tokens_details" if completion_details.is_none() => {
                    completion_details = Some(reader.option(|reader| {
                        Some(CompletionTokensDetails {
                            reasoning_tokens: reader.count("reasoning_tokens")?,
                        })
                    })?);
                }
                b"prompt_tokens"
                | b"completion_tokens"
                | b"prompt_tokens_details"
                | b"completion_tokens_details" => return None,
                _ => reader.skip_value()?,
            }
            Some(())
        })?;
        Some(Usage {
            prompt_tokens: prompt_tokens.unwrap_or_default(),
            completion_tokens: completion_tokens.unwrap_or_default(),
            prompt_tokens_details: prompt_details.flatten(),
            completion_tokens_details: completion_details.flatten(),
        })
    }

    /// A details object of which only the count `name` (`Option<u64>`) is read.
    fn count(&mut self, name: &str) -> Option<Option<u64>> {
        let mut count = None;
        self.object(|reader, key| {
            if key == name.as_bytes() {
                if count.is_some() {
                    return None;
                }
                count = Some(reader.option(Self::u64)?);
            } else {
                reader.skip_value()?;
            }
            Some(())
        })?;
        Some(count.flatten())
    }
}

/// The chunk's fields read so far, each `Some` once its key was seen: a repeated key is
/// declined (serde refuses it).
#[derive(Debug, Clone, Default)]
struct ChunkFields {
    choices: Option<Vec<ChunkChoice>>,
    usage: Option<Option<Usage>>,
    error: Option<()>,
}

impl ChunkFields {
    fn field<'a>(&mut self, reader: &mut Reader<'a>, key: &'a [u8]) -> Option<()> {
        match key {
            b"choices" if self.choices.is_none() => {
                let choices = reader.choices(self)?;
                self.choices = Some(choices);
            }
            b"usage" if self.usage.is_none() => self.usage = Some(reader.option(Reader::usage)?),
            // `error` is taken only when `null`.
            b"error" if self.error.is_none() => self.error = Some(reader.null()?),
            b"choices" | b"usage" | b"error" => return None,
            _ => reader.skip_value()?,
        }
        Some(())
    }

    fn finish(self) -> Chunk {
        Chunk {
            choices: self.choices.unwrap_or_default(),
            usage: self.usage.flatten(),
            error: None,
        }
    }
}

/// A choice's fields read so far (as [`ChunkFields`]).
#[derive(Debug, Clone, Default)]
struct ChoiceFields {
    index: Option<u32>,
    delta: Option<Option<Delta>>,
    finish_reason: Option<Option<String>>,
    logprobs: Option<()>,
}

impl ChoiceFields {
    /// `chunk`: the chunk's fields, for the first choice.
    fn field<'a>(
        &mut self,
        reader: &mut Reader<'a>,
        key: &'a [u8],
        chunk: Option<&ChunkFields>,
    ) -> Option<()> {
        match key {
            b"index" if self.index.is_none() => self.index = Some(reader.u32()?),
            b"delta" if self.delta.is_none() => {
                let outer = chunk.map(|chunk| (chunk, &*self));
                let delta = reader.option(|reader| reader.delta(outer))?;
                self.delta = Some(delta);
            }
            b"finish_reason" if self.finish_reason.is_none() => {
                self.finish_reason = Some(reader.option(Reader::string)?);
            }
            // `logprobs` is taken only when `null`.
            b"logprobs" if self.logprobs.is_none() => self.logprobs = Some(reader.null()?),
            b"index" | b"delta" | b"finish_reason" | b"logprobs" => return None,
            _ => reader.skip_value()?,
        }
        Some(())
    }

    fn finish(self) -> ChunkChoice {
        ChunkChoice {
            index: self.index.unwrap_or_default(),
            delta: self.delta.flatten(),
            finish_reason: self.finish_reason.flatten(),
            logprobs: None,
        }
    }
}

/// A delta's fields read so far (as [`ChunkFields`]).
#[derive(Debug, Clone, Default)]
struct DeltaFields {
    content: Option<Option<String>>,
    tool_calls: Option<Option<Vec<ToolCallDelta>>>,
}

impl DeltaFields {
    /// `outer`: the chunk's and the choice's fields, for the first choice's delta (its text is
    /// marked).
    fn field<'a>(
        &mut self,
        reader: &mut Reader<'a>,
        key: &'a [u8],
        outer: Option<(&ChunkFields, &ChoiceFields)>,
    ) -> Option<()> {
        match key {
            b"content" if self.content.is_none() => {
                let at = reader.at;
                let text = reader.text()?;
                if let Some((chunk, choice)) = outer {
                    reader.mark = Some(Mark {
                        at,
                        end: reader.at,
                        state: AtText {
                            chunk: chunk.clone(),
                            choice: choice.clone(),
                            delta: self.clone(),
                        },
                    });
                }
                self.content = Some(text);
            }
            b"tool_calls" if self.tool_calls.is_none() => {
                self.tool_calls = Some(reader.option(|reader| reader.array(Reader::tool_call))?);
            }
            b"content" | b"tool_calls" => return None,
            _ => reader.skip_value()?,
        }
        Some(())
    }

    fn finish(self) -> Delta {
        Delta {
            content: self.content.flatten(),
            tool_calls: self.tool_calls.flatten(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the fast path took `data`; when it did, serde must read the very same chunk.
    fn agree(data: &str) -> bool {
        crate::edits::agrees_with_serde(data, chunk(data).0, serde_json::from_str::<Chunk>(data))
    }

    /// Chunks as real upstreams write them (from their documentation and captured streams):
    /// unknown fields of every shape at every level.
    const UPSTREAMS: [&str; 16] = [
        // OpenAI: the first chunk, a text delta, the finish, the usage chunk.
        r#"{"id":"chatcmpl-C1aBcDeFgHiJkLmNoPqRsTuVwXyZ","object":"chat.completion.chunk","created":1754000000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_560af6e559","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"mYq3"}"#,
        r#"{"id":"chatcmpl-C1aBcDeFgHiJkLmNoPqRsTuVwXyZ","object":"chat.completion.chunk","created":1754000000,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_560af6e559","choices":[{"index":0,"delta":{"content":" tok12"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"Xo9vQ2"}"#,
        r#"{"id":"chatcmpl-C1a","object":"chat.completion.chunk","created":1754000000,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}"#,
        r#"{"id":"chatcmpl-C1a","object":"chat.completion.chunk","created":1754000000,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,"prompt_tokens_details":{"cached_tokens":3,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":2,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"obfuscation":"a"}"#,
        // OpenAI tool calls: the call's head, then argument pieces.
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","type":"function","function":{"name":"get_weather","arguments":""}}],"refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}"#,
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"location\":\"Paris, Fr"}}]},"logprobs":null,"finish_reason":null}],"usage":null}"#,
        // vLLM: stop_reason, reasoning_content, a usage without details.
        r#"{"id":"chatcmpl-8a7d","object":"chat.completion.chunk","created":1718000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" world"},"logprobs":null,"finish_reason":null,"stop_reason":null}]}"#,
        r#"{"id":"chatcmpl-8a7d","object":"chat.completion.chunk","created":1718000000,"model":"Qwen/Qwen3-8B","choices":[{"index":0,"delta":{"reasoning_content":"Let me think"},"logprobs":null,"finish_reason":"stop","stop_reason":151645}],"usage":{"prompt_tokens":10,"total_tokens":12,"completion_tokens":2,"prompt_tokens_details":null}}"#,
        // Ollama: no logprobs key, reasoning text, a tool call with its id first.
        r#"{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1720000000,"model":"llama3.2","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"Hmm"},"finish_reason":null}]}"#,
        r#"{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1720000000,"model":"llama3.2","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_x1","index":0,"type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}]}"#,
        // OpenRouter: provider, native_finish_reason, reasoning details, a usage with cost.
        r#"{"id":"gen-1754-Ab","provider":"OpenAI","model":"openai/gpt-4o","object":"chat.completion.chunk","created":1754000000,"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi","reasoning":null,"reasoning_details":[{"type":"reasoning.text","text":"x","format":"unknown","index":0}]},"finish_reason":null,"native_finish_reason":null,"logprobs":null}]}"#,
        r#"{"id":"gen-1754-Ab","provider":"OpenAI","model":"openai/gpt-4o","object":"chat.completion.chunk","created":1754000000,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop","native_finish_reason":"stop","logprobs":null}],"usage":{"prompt_tokens":8,"completion_tokens":2,"total_tokens":10,"cost":0.0000195,"is_byok":false,"prompt_tokens_details":{"cached_tokens":0},"cost_details":{"upstream_inference_cost":null},"completion_tokens_details":{"reasoning_tokens":0}}}"#,
        // Groq: x_groq with its own usage (floats, exponents).
        r#"{"id":"chatcmpl-f51b","object":"chat.completion.chunk","created":1720000000,"model":"llama-3.1-8b-instant","system_fingerprint":"fp_179b0f92c9","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"x_groq":{"id":"req_01j","usage":{"queue_time":0.021,"prompt_tokens":10,"prompt_time":1.2e-3,"completion_tokens":5,"completion_time":0.01,"total_tokens":15,"total_time":-0.5E+2}}}"#,
        // Azure OpenAI: the prompt filter chunk, filter results in a choice.
        r#"{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"jailbreak":{"filtered":false,"detected":false}}}]}"#,
        r#"{"choices":[{"content_filter_results":{},"delta":{"content":"Hello","role":"assistant"},"finish_reason":null,"index":0,"logprobs":null}],"created":1720000000,"id":"chatcmpl-9","model":"gpt-4o-2024-05-13","object":"chat.completion.chunk","system_fingerprint":"fp_abc"}"#,
        // llama.cpp (timings), Gemini's compatible endpoint (a call with its thought signature).
        r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"Hi"}}],"created":1720000000,"id":"chatcmpl-Z","model":"gpt-3.5-turbo","system_fingerprint":"b4000-12ab","object":"chat.completion.chunk","timings":{"prompt_n":1,"prompt_ms":1.5,"predicted_per_second":50.25}}"#,
    ];

    #[test]
    fn upstream_chunks_are_read_in_one_pass_as_serde_reads_them() {
        for data in UPSTREAMS {
            assert!(agree(data), "not taken: {data}");
        }
        for data in [
            r#"{"choices":[{"delta":{"role":"assistant","tool_calls":[{"function":{"arguments":"{}","name":"f"},"id":"x","type":"function","extra_content":{"google":{"thought_signature":"c2ln"}}}]},"finish_reason":"tool_calls","index":0}],"created":1720000000,"model":"gemini-2.5-flash","object":"chat.completion.chunk","usage":{"completion_tokens":5,"prompt_tokens":3,"total_tokens":8}}"#,
            // Whitespace everywhere, other choices, nulls for every optional field.
            " { \"choices\" : [ { \"index\" : 1 , \"delta\" : { \"content\" : \"b\" } } ,\n{\"index\":0,\"delta\":null,\"finish_reason\":null}\t] , \"usage\" : null , \"error\" : null }\r\n",
            r#"{"choices":[{"index":0,"delta":{"content":null,"tool_calls":null}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":null,"id":null,"function":null,"extra_content":null}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"name":null,"arguments":null},"extra_content":{"google":null}},{"extra_content":{"google":{"thought_signature":null,"x":1}}}]}}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens_details":{"cached_tokens":null},"completion_tokens_details":{}}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":9999999999999999999,"completion_tokens":0}}"#,
            r#"{}"#,
            // Unknown fields of any shape, keys with escapes, lone surrogates (serde passes over
            // them in a skipped string).
            r#"{"u":[[],{},[{"a":[1,-0.5e3,true,false,null,"x"]}],{"b\"\u00e9":{"c":{}}}],"v":"\udc00\ud800","choices":[]}"#,
        ] {
            assert!(agree(data), "not taken: {data}");
        }
    }

    #[test]
    fn escapes_and_non_ascii_text_decode_as_serde_does() {
        let data = r#"{"choices":[{"index":0,"delta":{"content":"a\n\"q\"\\\/\b\f\r\t é 😀 \u00e9\ud83d\ude00\u0000\uFFFF"}}]}"#;
        assert!(agree(data));
        let text = chunk(data)
            .0
            .and_then(|chunk| chunk.choices.into_iter().next())
            .and_then(|choice| choice.delta)
            .and_then(|delta| delta.content);
        assert_eq!(
            text.as_deref(),
            Some("a\n\"q\"\\/\u{8}\u{c}\r\t é 😀 é😀\u{0}\u{ffff}")
        );
    }

    #[test]
    fn anything_else_is_left_to_serde() {
        let deep = format!(
            r#"{{"u":{}{},"choices":[]}}"#,
            "[".repeat(65),
            "]".repeat(65)
        );
        for data in [
            // Non-null logprobs and errors.
            r#"{"choices":[{"index":0,"delta":{"content":"a"},"logprobs":{"content":[]}}]}"#,
            r#"{"error":{"message":"overloaded","type":"server_error"}}"#,
            r#"{"error":"overloaded"}"#,
            // Keys with escapes (serde decodes them).
            r#"{"choices":[{"index":0,"delta":{"c\u006fntent":"a"}}]}"#,
            r#"{"ch\u006fices":[]}"#,
            // Repeated known keys.
            r#"{"choices":[],"choices":[]}"#,
            r#"{"choices":[{"index":0,"index":0}]}"#,
            r#"{"choices":[{"delta":{"content":"a","content":"b"}}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":1,"prompt_tokens":2}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":2}}}"#,
            // Numbers serde reads otherwise or refuses.
            r#"{"choices":[{"index":"0"}]}"#,
            r#"{"choices":[{"index":null}]}"#,
            r#"{"choices":[{"index":-0}]}"#,
            r#"{"choices":[{"index":1.0}]}"#,
            r#"{"choices":[{"index":1e0}]}"#,
            r#"{"choices":[{"index":01}]}"#,
            r#"{"choices":[{"index":4294967296}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":18446744073709551616}}"#,
            // Other shapes.
            r#"{"choices":null}"#,
            r#"{"choices":[{"index":0,"delta":[]}]}"#,
            r#"{"choices":[[0,{"content":"a"}]]}"#,
            r#"[[]]"#,
            r#"{"choices":[{"index":0,"delta":{"content":7}}]}"#,
            // Strings serde refuses: lone surrogates, control characters, bad escapes.
            r#"{"choices":[{"index":0,"delta":{"content":"\ud800"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"\udc00"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"\ud800\u0041"}}]}"#,
            "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\tb\"}}]}",
            "{\"id\":\"a\nb\",\"choices\":[]}",
            r#"{"id":"\x","choices":[]}"#,
            r#"{"id":"\u12G4","choices":[]}"#,
            // Malformed.
            r#"{"choices":[],}"#,
            r#"{"choices":[1,]}"#,
            r#"{"u":[1,],"choices":[]}"#,
            r#"{"u":{"a":1,},"choices":[]}"#,
            r#"{"u":{"a"},"choices":[]}"#,
            r#"{"u":nul,"choices":[]}"#,
            r#"{"u":-,"choices":[]}"#,
            r#"{"u":1.,"choices":[]}"#,
            r#"{"u":1e,"choices":[]}"#,
            r#"{"u":00,"choices":[]}"#,
            r#"{"choices":[]}{}"#,
            r#"{"choices":[]"#,
            // Deeper than the skipper goes (serde reads it).
            &deep,
        ] {
            assert!(!agree(data), "taken: {data}");
        }
    }

    /// Every single-character edit of real upstreams' chunks: whatever the fast path still
    /// takes, serde reads the same way.
    #[test]
    fn edited_chunks_never_disagree_with_serde() {
        let bases = [
            UPSTREAMS[1],
            UPSTREAMS[3],
            UPSTREAMS[5],
            UPSTREAMS[12],
            r#"{"choices":[{"index":10,"delta":{"content":"a\"é\ud83d\ude00","tool_calls":[{"index":2,"id":"c","function":{"name":"f","arguments":"{}"},"extra_content":{"google":{"thought_signature":"s"}}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"prompt_tokens_details":{"cached_tokens":3}},"u":[null,true,-1.5e+3,{"k":"\u00e9"}]}"#,
        ];
        let edits: Vec<String> = bases
            .into_iter()
            .flat_map(crate::edits::single_character_edits)
            .collect();
        let taken = edits.iter().filter(|edited| agree(edited)).count();
        assert!(taken > 10_000, "{taken} of {}", edits.len());
    }
}
