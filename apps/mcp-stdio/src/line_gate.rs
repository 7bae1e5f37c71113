//! The line gate: reads stdin one line at a time, with a bound, before rmcp sees it.
//!
//! rmcp's stdio transport drops, without a word, a line that is not valid JSON (invalid UTF-8, a
//! lone surrogate escape such as the `"\ud800"` a cut-off emoji leaves) and a line over its own
//! 16 MiB bound: the host then waits forever for the answer to that request. The gate answers such
//! a line itself, with a JSON-RPC parse error (-32700), and forwards only well-formed JSON to rmcp
//! (ADR 0024):
//!
//! - a line is at most [`MAX_LINE_BYTES`]; a longer one is read to its newline without being kept
//!   (memory stays at the bound), answered, and the next line is read as usual;
//! - a line must be UTF-8 JSON whose strings are valid Unicode (checked without building a value);
//! - the answer carries the request's `id` when a tolerant scan of the raw bytes finds a top-level
//!   `"method"` key and a top-level `"id"` that is an integer or a string, and no top-level
//!   `"result"` or `"error"` (a response's id is the server's own, and must not come back as if it
//!   answered a client request); otherwise the answer has no `id`, as MCP 2026-07-28 prescribes
//!   for an error whose request id cannot be read (and as rmcp's own answers do). Every refusal is
//!   also logged on stderr;
//! - blank lines are skipped, as rmcp does.

use std::io;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The longest line (one JSON-RPC message, newline included) the stdio app reads: 4 MiB.
///
/// Four times the HTTP body limit (1 MiB), so anything the HTTP transport accepts fits; well under
/// rmcp's own 16 MiB, so rmcp never drops a line the gate let through.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// JSON-RPC 2.0's code for "Invalid JSON was received by the server".
const PARSE_ERROR: i64 = -32700;

/// The longest `id` string the scan recovers; a longer one is answered with `"id": null`.
const MAX_RECOVERED_ID_BYTES: usize = 1024;

/// Why a line was refused before reaching rmcp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    TooLong,
    NotUtf8,
    NotJson,
}

impl Refusal {
    fn message(self, max_line_bytes: usize) -> String {
        match self {
            Self::TooLong => format!(
                "Erro de análise: a mensagem passa do limite de {max_line_bytes} bytes por linha e foi \
                 descartada sem ser lida. Nada foi executado."
            ),
            Self::NotUtf8 => "Erro de análise: a mensagem não é UTF-8 válido (um caractere cortado ao meio, \
                              por exemplo). Nada foi executado; envie-a de novo em UTF-8."
                .to_owned(),
            Self::NotJson => "Erro de análise: a mensagem não é JSON válido (um escape \\u de surrogate sem \
                              par, como o de um emoji cortado ao meio, também não é). Nada foi executado."
                .to_owned(),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::TooLong => "line too long",
            Self::NotUtf8 => "not UTF-8",
            Self::NotJson => "not JSON",
        }
    }
}

/// Reads lines from an input, forwards well-formed ones to the server and answers the others.
#[derive(Debug, Clone, Copy)]
pub struct LineGate {
    max_line_bytes: usize,
}

impl Default for LineGate {
    fn default() -> Self {
        Self { max_line_bytes: MAX_LINE_BYTES }
    }
}

impl LineGate {
    /// A gate with another bound than [`MAX_LINE_BYTES`] (tests use a small one).
    #[must_use]
    pub fn with_max_line_bytes(max_line_bytes: usize) -> Self {
        Self { max_line_bytes: max_line_bytes.max(1) }
    }

    /// Reads `input` to its end: each well-formed line is written whole to `server` (a line
    /// without a newline at the very end gets one), each refused line's answer (one JSON-RPC line,
    /// newline included) is sent to `answers`. Returns at the end of `input`, or when `server` no
    /// longer reads. `server` is not shut down: the caller decides when the server sees the end.
    ///
    /// # Errors
    /// The error reading `input`, or writing to `server`.
    pub async fn forward<R, W>(&self, input: R, server: &mut W, answers: &mpsc::Sender<Vec<u8>>) -> io::Result<()>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let mut input = BufReader::with_capacity(64 * 1024, input);
        let mut line: Vec<u8> = Vec::new();
        // Set while reading the rest of a line already over the bound: its bytes only feed the scan.
        let mut oversized: Option<IdScanner> = None;
        loop {
            let (consumed, line_ended) = {
                let available = input.fill_buf().await?;
                if available.is_empty() {
                    break;
                }
                let newline = available.iter().position(|byte| *byte == b'\n');
                let take = newline.map_or(available.len(), |index| index + 1);
                let chunk = &available[..take];
                if let Some(scanner) = oversized.as_mut() {
                    scanner.feed(chunk);
                } else if line.len() + chunk.len() > self.max_line_bytes {
                    let mut scanner = IdScanner::default();
                    scanner.feed(&line);
                    scanner.feed(chunk);
                    oversized = Some(scanner);
                    line = Vec::new();
                } else {
                    line.extend_from_slice(chunk);
                }
                (take, newline.is_some())
            };
            input.consume(consumed);
            if line_ended {
                if let Some(scanner) = oversized.take() {
                    self.answer(Refusal::TooLong, scanner.recovered_id(), answers).await;
                } else {
                    self.pass(&line, server, answers).await?;
                    line.clear();
                    if line.capacity() > 64 * 1024 {
                        line.shrink_to(64 * 1024);
                    }
                }
            }
        }
        // The end of input in the middle of a line: the line is taken as it is.
        if let Some(scanner) = oversized.take() {
            self.answer(Refusal::TooLong, scanner.recovered_id(), answers).await;
        } else if !line.is_empty() {
            line.push(b'\n');
            self.pass(&line, server, answers).await?;
        }
        Ok(())
    }

    /// Forwards one whole line (newline included, within the bound), or answers it.
    async fn pass<W: AsyncWrite + Unpin>(
        &self,
        line: &[u8],
        server: &mut W,
        answers: &mpsc::Sender<Vec<u8>>,
    ) -> io::Result<()> {
        match check(line) {
            Checked::Blank => Ok(()),
            Checked::WellFormed => {
                server.write_all(line).await?;
                server.flush().await
            }
            Checked::Refused(refusal) => {
                let mut scanner = IdScanner::default();
                scanner.feed(line);
                self.answer(refusal, scanner.recovered_id(), answers).await;
                Ok(())
            }
        }
    }

    async fn answer(&self, refusal: Refusal, id: Option<RecoveredId>, answers: &mpsc::Sender<Vec<u8>>) {
        let id_value = match &id {
            Some(RecoveredId::Number(number)) => Some(serde_json::Value::from(*number)),
            Some(RecoveredId::Text(text)) => Some(serde_json::Value::from(text.as_str())),
            None => None,
        };
        tracing::warn!(
            reason = refusal.as_str(),
            id = %id_value.as_ref().map_or_else(|| "none".to_owned(), ToString::to_string),
            max_line_bytes = self.max_line_bytes,
            "refused a line on stdin: answered with a JSON-RPC parse error (-32700), nothing executed"
        );
        let mut answer = serde_json::Map::new();
        answer.insert("jsonrpc".to_owned(), "2.0".into());
        // Without an id, none: MCP 2026-07-28 omits it "when the server cannot read the request
        // id", as rmcp's own invalid-request answers do (ADR 0024).
        if let Some(id) = id_value {
            answer.insert("id".to_owned(), id);
        }
        answer.insert(
            "error".to_owned(),
            serde_json::json!({ "code": PARSE_ERROR, "message": refusal.message(self.max_line_bytes) }),
        );
        let mut bytes = serde_json::Value::Object(answer).to_string().into_bytes();
        bytes.push(b'\n');
        // Closed only when the output is gone: nobody could read the answer anyway.
        let _ = answers.send(bytes).await;
    }
}

enum Checked {
    Blank,
    WellFormed,
    Refused(Refusal),
}

/// What rmcp would make of a line within the bound: blank, JSON it can parse, or a line it would
/// drop without an answer.
fn check(line: &[u8]) -> Checked {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // rmcp ignores a leading byte order mark (RFC 8259 §8.1 allows it).
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Checked::Blank;
    }
    if std::str::from_utf8(line).is_err() {
        return Checked::Refused(Refusal::NotUtf8);
    }
    match serde_json::from_slice::<WellFormedJson>(line) {
        Ok(WellFormedJson) => Checked::WellFormed,
        Err(error) => {
            tracing::debug!(%error, "a line on stdin is not JSON");
            Checked::Refused(Refusal::NotJson)
        }
    }
}

/// Any JSON value whose strings (keys included) are valid Unicode, checked as a typed parse would
/// check them (serde's `IgnoredAny` would let a lone surrogate through). Builds nothing.
struct WellFormedJson;

impl<'de> Deserialize<'de> for WellFormedJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(WellFormedVisitor)
    }
}

struct WellFormedVisitor;

impl<'de> Visitor<'de> for WellFormedVisitor {
    type Value = WellFormedJson;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<WellFormedJson, E> {
        Ok(WellFormedJson)
    }

    fn visit_i64<E>(self, _: i64) -> Result<WellFormedJson, E> {
        Ok(WellFormedJson)
    }

    fn visit_u64<E>(self, _: u64) -> Result<WellFormedJson, E> {
        Ok(WellFormedJson)
    }

    fn visit_f64<E>(self, _: f64) -> Result<WellFormedJson, E> {
        Ok(WellFormedJson)
    }

    fn visit_str<E>(self, _: &str) -> Result<WellFormedJson, E> {
        Ok(WellFormedJson)
    }

    fn visit_unit<E>(self) -> Result<WellFormedJson, E> {
        Ok(WellFormedJson)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut sequence: A) -> Result<WellFormedJson, A::Error> {
        while sequence.next_element::<WellFormedJson>()?.is_some() {}
        Ok(WellFormedJson)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WellFormedJson, A::Error> {
        while map.next_entry::<WellFormedJson, WellFormedJson>()?.is_some() {}
        Ok(WellFormedJson)
    }
}

/// A request id found by [`IdScanner`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum RecoveredId {
    Number(i64),
    Text(String),
}

/// A tolerant, incremental scan of a line's raw bytes for the top-level keys of a JSON object:
/// `"id"` (its value kept when an integer or a short string), `"method"`, `"result"`, `"error"`.
///
/// It follows strings (with their escapes) and nesting, so an `"id"` inside `params` or inside a
/// string does not count; bytes that are not valid UTF-8 or not valid JSON are stepped over. Fed
/// chunk by chunk, it keeps at most [`MAX_RECOVERED_ID_BYTES`], whatever the line's length.
#[derive(Debug, Default)]
struct IdScanner {
    /// The first non-blank byte was `{` (`Some(true)`), something else (`Some(false)`), or not seen.
    object: Option<bool>,
    /// `{` and `[` open, `}` and `]` close; the top-level object's keys are at depth 1.
    depth: usize,
    /// Inside a string, and whether the previous byte was a backslash.
    string: Option<StringScan>,
    /// At depth 1, the next string is a key (after `{` or `,`).
    expecting_key: bool,
    /// The last top-level key, when it was one of those looked for, until its value starts.
    pending_key: Option<Key>,
    /// Waiting for the `:` after a key, then for its value.
    after_key: Option<AfterKey>,
    /// The `id` value being read (a number's or a string's raw bytes, capped).
    id_value: Option<IdValue>,
    id: Option<Option<RecoveredId>>,
    has_method: bool,
    has_result_or_error: bool,
}

#[derive(Debug, Default)]
struct StringScan {
    escaped: bool,
    /// The bytes of a top-level key, kept while short enough to be one of those looked for.
    key: Option<Vec<u8>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Id,
    Method,
    ResultOrError,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterKey {
    Colon,
    Value,
}

#[derive(Debug)]
enum IdValue {
    Number(Vec<u8>),
    Text { bytes: Vec<u8>, escaped: bool },
}

impl IdScanner {
    fn feed(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.step(byte);
        }
    }

    fn step(&mut self, byte: u8) {
        if self.object == Some(false) {
            return;
        }
        if let Some(value) = self.id_value.as_mut() {
            match value {
                IdValue::Text { bytes, escaped } => {
                    if *escaped {
                        *escaped = false;
                    } else if byte == b'\\' {
                        *escaped = true;
                    } else if byte == b'"' {
                        let id = Self::text_id(bytes);
                        self.finish_id(id);
                        return;
                    }
                    if bytes.len() <= MAX_RECOVERED_ID_BYTES {
                        bytes.push(byte);
                    }
                    return;
                }
                IdValue::Number(bytes) => {
                    if byte.is_ascii_digit() || matches!(byte, b'-' | b'+' | b'.' | b'e' | b'E') {
                        if bytes.len() <= 32 {
                            bytes.push(byte);
                        }
                        return;
                    }
                    let id =
                        std::str::from_utf8(bytes).ok().and_then(|text| text.parse().ok()).map(RecoveredId::Number);
                    self.finish_id(id);
                    // The byte that ended the number is structure: scanned below.
                }
            }
        }
        if let Some(string) = self.string.as_mut() {
            if string.escaped {
                string.escaped = false;
            } else if byte == b'\\' {
                string.escaped = true;
                string.key = None;
            } else if byte == b'"' {
                let key = self.string.take().and_then(|string| string.key);
                self.pending_key = match key.as_deref() {
                    Some(b"id") => Some(Key::Id),
                    Some(b"method") => Some(Key::Method),
                    Some(b"result" | b"error") => Some(Key::ResultOrError),
                    _ => None,
                };
                if key.is_some() {
                    self.after_key = Some(AfterKey::Colon);
                }
                return;
            }
            if let Some(key) = string.key.as_mut() {
                if key.len() < 8 {
                    key.push(byte);
                } else {
                    string.key = None;
                }
            }
            return;
        }
        if byte.is_ascii_whitespace() {
            return;
        }
        if self.object.is_none() {
            self.object = Some(byte == b'{');
        }
        match self.after_key {
            Some(AfterKey::Colon) if byte == b':' => {
                self.after_key = Some(AfterKey::Value);
                return;
            }
            Some(AfterKey::Value) => {
                self.after_key = None;
                match self.pending_key.take() {
                    Some(Key::Method) => self.has_method = true,
                    Some(Key::ResultOrError) => self.has_result_or_error = true,
                    Some(Key::Id) if self.id.is_none() => {
                        if byte == b'"' {
                            self.id_value = Some(IdValue::Text { bytes: Vec::new(), escaped: false });
                            return;
                        }
                        if byte == b'-' || byte.is_ascii_digit() {
                            self.id_value = Some(IdValue::Number(vec![byte]));
                            return;
                        }
                        // null, an object, ...: not an id a request may carry.
                        self.id = Some(None);
                    }
                    Some(Key::Id) | None => {}
                }
            }
            _ => {
                self.after_key = None;
                self.pending_key = None;
            }
        }
        match byte {
            b'{' | b'[' => {
                self.depth += 1;
                self.expecting_key = self.depth == 1 && byte == b'{';
            }
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                self.expecting_key = false;
            }
            b',' => self.expecting_key = self.depth == 1,
            b'"' => {
                let key = (self.depth == 1 && self.expecting_key).then(Vec::new);
                self.expecting_key = false;
                self.string = Some(StringScan { escaped: false, key });
            }
            _ => {}
        }
    }

    fn text_id(raw: &[u8]) -> Option<RecoveredId> {
        if raw.len() > MAX_RECOVERED_ID_BYTES {
            return None;
        }
        let mut quoted = Vec::with_capacity(raw.len() + 2);
        quoted.push(b'"');
        quoted.extend_from_slice(raw);
        quoted.push(b'"');
        serde_json::from_slice::<String>(&quoted).ok().map(RecoveredId::Text)
    }

    fn finish_id(&mut self, id: Option<RecoveredId>) {
        self.id_value = None;
        if self.id.is_none() {
            self.id = Some(id);
        }
    }

    /// The id to answer with: a request's (`"method"` and `"id"` at the top level, no `"result"`
    /// or `"error"`), else none.
    fn recovered_id(mut self) -> Option<RecoveredId> {
        // A number at the very end of the input has no byte after it to end it.
        if let Some(IdValue::Number(bytes)) = self.id_value.take() {
            let id = std::str::from_utf8(&bytes).ok().and_then(|text| text.parse().ok()).map(RecoveredId::Number);
            self.finish_id(id);
        }
        if self.object != Some(true) || !self.has_method || self.has_result_or_error {
            return None;
        }
        self.id.flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(line: &[u8]) -> Option<RecoveredId> {
        let mut scanner = IdScanner::default();
        scanner.feed(line);
        scanner.recovered_id()
    }

    fn number(id: i64) -> Option<RecoveredId> {
        Some(RecoveredId::Number(id))
    }

    fn text(id: &str) -> Option<RecoveredId> {
        Some(RecoveredId::Text(id.to_owned()))
    }

    #[test]
    fn the_id_of_a_request_is_found_wherever_it_sits_among_the_top_level_keys() {
        assert_eq!(scan(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#), number(7));
        assert_eq!(scan(br#"{ "method" : "ping" , "id" : -12 }"#), number(-12));
        assert_eq!(scan(br#"{"method":"ping","params":{},"id":"a-b"}"#), text("a-b"));
        assert_eq!(scan(br#"{"method":"ping","id":"aspas \" e \\ barra"}"#), text("aspas \" e \\ barra"));
        assert_eq!(scan(br#"{"method":"ping","id":"caf\u00e9"}"#), text("café"));
    }

    #[test]
    fn an_id_inside_params_or_inside_a_string_is_not_the_request_id() {
        assert_eq!(scan(br#"{"method":"x","params":{"id":3}}"#), None);
        assert_eq!(scan(br#"{"method":"x","params":{"id":3},"id":4}"#), number(4));
        assert_eq!(scan(br#"{"method":"x","params":["id",5],"id":6}"#), number(6));
        assert_eq!(scan(br#"{"method":"texto com \"id\":9 dentro","id":10}"#), number(10));
        assert_eq!(scan(br#"{"method":"x","nota":"id","id":11}"#), number(11));
    }

    #[test]
    fn the_scan_steps_over_invalid_utf8_and_broken_escapes() {
        assert_eq!(
            scan(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"t\":\"caf\xC3\"}}"),
            number(7)
        );
        assert_eq!(scan(br#"{"id":"corte","method":"tools/call","params":{"t":"\ud800"}}"#), text("corte"));
        assert_eq!(scan(b"{\"id\":8,\"method\":\"x\",\"params\":{\"t\":\"\xFF\xFE\" , } garbage ]]"), number(8));
        // Cut off in the middle: what was seen is enough.
        assert_eq!(scan(br#"{"jsonrpc":"2.0","method":"tools/call","id":9,"params":{"titulo":"abc"#), number(9));
        assert_eq!(scan(br#"{"method":"ping","id":42"#), number(42));
    }

    #[test]
    fn no_id_is_recovered_from_responses_notifications_or_odd_ids() {
        assert_eq!(scan(br#"{"jsonrpc":"2.0","id":0,"result":{"x":"#), None, "a response: the id is the server's");
        assert_eq!(scan(br#"{"jsonrpc":"2.0","id":0,"error":{"#), None);
        assert_eq!(scan(br#"{"jsonrpc":"2.0","method":"notifications/x","params":{"#), None);
        assert_eq!(scan(br#"{"jsonrpc":"2.0","id":7,"met"#), None, "cut before its method: could be a response");
        assert_eq!(scan(br#"{"method":"x","id":null}"#), None);
        assert_eq!(scan(br#"{"method":"x","id":{"n":1}}"#), None);
        assert_eq!(scan(br#"{"method":"x","id":1.5}"#), None);
        assert_eq!(scan(br#"{"method":"x","id":"\ud800"}"#), None);
        assert_eq!(scan(br#"[{"method":"x","id":1}]"#), None);
        assert_eq!(scan(b"lixo \"id\":1 \"method\":\"x\""), None);
        let long_id = format!(r#"{{"method":"x","id":"{}"}}"#, "a".repeat(MAX_RECOVERED_ID_BYTES + 1));
        assert_eq!(scan(long_id.as_bytes()), None);
    }

    #[test]
    fn the_first_top_level_id_wins() {
        assert_eq!(scan(br#"{"method":"x","id":1,"id":2}"#), number(1));
    }

    #[test]
    fn the_scan_gives_the_same_answer_fed_one_byte_at_a_time() {
        let line = br#"{"jsonrpc":"2.0","id":"passo","method":"tools/call","params":{"id":1,"s":"\"}"}}"#;
        let mut scanner = IdScanner::default();
        for byte in line {
            scanner.feed(std::slice::from_ref(byte));
        }
        assert_eq!(scanner.recovered_id(), text("passo"));
    }

    #[test]
    fn a_line_is_well_formed_only_when_rmcp_could_parse_it() {
        assert!(matches!(check(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"), Checked::WellFormed));
        assert!(matches!(check(b"\xEF\xBB\xBF{\"a\":\"caf\xC3\xA9 \\ud83d\\ude00\"}\r\n"), Checked::WellFormed));
        assert!(matches!(check(b"[1, 2.5, null, true, \"x\"]\n"), Checked::WellFormed));
        assert!(matches!(check(b"   \r\n"), Checked::Blank));
        assert!(matches!(check(b"\n"), Checked::Blank));
        assert!(matches!(check(b"{\"a\":\"caf\xC3\"}\n"), Checked::Refused(Refusal::NotUtf8)));
        assert!(matches!(check(b"{\"a\":\"\\ud800\"}\n"), Checked::Refused(Refusal::NotJson)));
        assert!(matches!(check(b"{\"\\udc00\":1}\n"), Checked::Refused(Refusal::NotJson)));
        assert!(matches!(check(b"{\"a\":[{\"b\":\"\\ud83d x\"}]}\n"), Checked::Refused(Refusal::NotJson)));
        assert!(matches!(check(b"{\"a\":1\n"), Checked::Refused(Refusal::NotJson)));
        assert!(matches!(check(b"{\"a\":1} {\"b\":2}\n"), Checked::Refused(Refusal::NotJson)));
    }

    /// Runs the gate over `input` (read in chunks of at most `chunk` bytes); returns what reached
    /// the server and the answers.
    async fn run(gate: LineGate, input: &[u8], chunk: usize) -> (Vec<u8>, Vec<serde_json::Value>) {
        let (mut feeder, gate_input) = tokio::io::duplex(chunk.max(1));
        let input = input.to_vec();
        let feeding = tokio::spawn(async move {
            feeder.write_all(&input).await.expect("feed");
        });
        let (answers, mut answered) = mpsc::channel(1024);
        let mut server = Vec::new();
        gate.forward(gate_input, &mut server, &answers).await.expect("gate");
        feeding.await.expect("fed");
        drop(answers);
        let mut answers = Vec::new();
        while let Some(answer) = answered.recv().await {
            assert_eq!(answer.iter().filter(|byte| **byte == b'\n').count(), 1, "one whole line");
            assert!(answer.ends_with(b"\n"));
            answers.push(serde_json::from_slice(&answer).expect("JSON"));
        }
        (server, answers)
    }

    /// A -32700 answer with `id`, or without an id at all for `None`.
    fn parse_error(id: Option<serde_json::Value>) -> impl Fn(&serde_json::Value) -> bool {
        move |answer| {
            answer["jsonrpc"] == "2.0" && answer.get("id") == id.as_ref() && answer["error"]["code"] == PARSE_ERROR
        }
    }

    #[tokio::test]
    async fn good_lines_reach_the_server_whole_and_in_order_and_blank_lines_are_skipped() {
        let input = b"{\"id\":1,\"method\":\"a\"}\n\n  \n{\"id\":2,\"method\":\"b\"}\r\n{\"id\":3,\"method\":\"c\"}";
        let (server, answers) = run(LineGate::default(), input, 3).await;
        assert_eq!(
            server,
            b"{\"id\":1,\"method\":\"a\"}\n{\"id\":2,\"method\":\"b\"}\r\n{\"id\":3,\"method\":\"c\"}\n"
        );
        assert!(answers.is_empty(), "{answers:?}");
    }

    #[tokio::test]
    async fn bad_lines_are_answered_with_their_id_and_the_next_line_still_passes() {
        let input = [
            &b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"t\":\"caf\xC3\"}}\n"[..],
            br#"{"jsonrpc":"2.0","id":"corte","method":"tools/call","params":{"t":"\ud800"}}"#,
            b"\n",
            b"isto nao e json\n",
            br#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#,
            b"\n",
        ]
        .concat();
        let (server, answers) = run(LineGate::default(), &input, 5).await;
        assert_eq!(server, b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}\n");
        assert_eq!(answers.len(), 3, "{answers:?}");
        assert!(parse_error(Some(7.into()))(&answers[0]), "{}", answers[0]);
        assert!(answers[0]["error"]["message"].as_str().is_some_and(|message| message.contains("UTF-8")));
        assert!(parse_error(Some("corte".into()))(&answers[1]), "{}", answers[1]);
        assert!(parse_error(None)(&answers[2]), "{}", answers[2]);
    }

    #[tokio::test]
    async fn a_line_over_the_bound_is_answered_without_being_kept_and_the_next_one_passes() {
        let gate = LineGate::with_max_line_bytes(64);
        let long =
            format!(r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"t":"{}"}},"id":9}}"#, "x".repeat(1000));
        let just_fits = format!(r#"{{"id":1,"method":"{}"}}"#, "y".repeat(64 - 21));
        assert_eq!(just_fits.len() + 1, 64);
        let input = format!("{long}\n{just_fits}\n{}\n", "z".repeat(65));
        let (server, answers) = run(gate, input.as_bytes(), 7).await;
        assert_eq!(server, format!("{just_fits}\n").as_bytes());
        assert_eq!(answers.len(), 2, "{answers:?}");
        assert!(parse_error(Some(9.into()))(&answers[0]), "{}", answers[0]);
        assert!(answers[0]["error"]["message"].as_str().is_some_and(|message| message.contains("64 bytes")));
        assert!(parse_error(None)(&answers[1]), "{}", answers[1]);
    }

    #[tokio::test]
    async fn a_line_cut_off_by_the_end_of_input_is_answered() {
        let (server, answers) = run(LineGate::default(), br#"{"jsonrpc":"2.0","method":"ping","id":5,"#, 64).await;
        assert!(server.is_empty());
        assert_eq!(answers.len(), 1);
        assert!(parse_error(Some(5.into()))(&answers[0]), "{}", answers[0]);
    }
}
