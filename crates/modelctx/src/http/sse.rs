//! Server-sent events: the encoder the server streams with, and an incremental parser for the
//! client (fed arbitrary chunks; comments ignored; `\n`, `\r\n` and `\r` line ends).

use bytes::Bytes;

/// Encodes one `message` event carrying a JSON-RPC message (which is a single line of JSON).
pub(crate) fn encode_message(json: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(json.len() + 24);
    append_message(&mut out, json);
    Bytes::from(out)
}

/// Appends one `message` event carrying a JSON-RPC message to `out` (see [`encode_message`]).
pub(crate) fn append_message(out: &mut Vec<u8>, json: &[u8]) {
    out.reserve(json.len() + 24);
    out.extend_from_slice(b"event: message\ndata: ");
    out.extend_from_slice(json);
    out.extend_from_slice(b"\n\n");
}

/// Encodes one `message` event with its `id` (a resumable stream's event).
pub(crate) fn encode_message_with_id(id: &str, json: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(json.len() + id.len() + 30);
    out.extend_from_slice(b"id: ");
    out.extend_from_slice(id.as_bytes());
    out.push(b'\n');
    append_message(&mut out, json);
    Bytes::from(out)
}

/// The event that opens a resumable stream: its first id, no data (a client ignores it) and
/// the reconnection delay, so that a client whose stream breaks before any message can resume.
pub(crate) fn priming(id: &str, retry_ms: Option<u128>) -> Bytes {
    let mut out = format!("id: {id}\n");
    if let Some(retry) = retry_ms {
        out.push_str(&format!("retry: {retry}\n"));
    }
    out.push_str("data: \n\n");
    Bytes::from(out)
}

/// A comment line, used as a keep-alive on long streams.
pub(crate) fn keep_alive() -> Bytes {
    Bytes::from_static(b": keep-alive\n\n")
}

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Event {
    /// The `event` field; `None` means the default `message`.
    pub event: Option<String>,
    /// The `data` lines joined with `\n`.
    pub data: String,
    /// The `id` field, if any.
    pub id: Option<String>,
}

/// An incremental parser. Feed it bytes as they arrive; it returns every completed event.
///
/// Lines longer than `max_line` bytes are an error, so a hostile stream cannot grow the buffer
/// without bound.
#[derive(Debug)]
pub struct Parser {
    buffer: Vec<u8>,
    current: Event,
    has_data: bool,
    skip_lf: bool,
    max_line: usize,
    last_event_id: Option<String>,
    retry: Option<u64>,
}

/// The stream broke the parser's limits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("server-sent event line longer than {0} bytes")]
pub struct LineTooLong(pub usize);

impl Default for Parser {
    fn default() -> Self {
        Self::new(16 * 1024 * 1024)
    }
}

impl Parser {
    /// A parser that accepts lines of up to `max_line` bytes.
    pub fn new(max_line: usize) -> Self {
        Self {
            buffer: Vec::new(),
            current: Event::default(),
            has_data: false,
            skip_lf: false,
            max_line,
            last_event_id: None,
            retry: None,
        }
    }

    /// The last `id` field seen on the stream, whether or not its event carried data (a
    /// handshake-era client resumes with it as `Last-Event-ID`).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The last valid `retry` field seen on the stream (reconnection delay in milliseconds).
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// Consumes a chunk and returns the events it completed.
    ///
    /// # Errors
    /// When a line exceeds the limit.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<Event>, LineTooLong> {
        let mut events = Vec::new();
        for &byte in chunk {
            if self.skip_lf {
                self.skip_lf = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' | b'\r' => {
                    self.skip_lf = byte == b'\r';
                    let line = std::mem::take(&mut self.buffer);
                    if let Some(event) = self.line(&line) {
                        events.push(event);
                    }
                }
                _ => {
                    if self.buffer.len() >= self.max_line {
                        return Err(LineTooLong(self.max_line));
                    }
                    self.buffer.push(byte);
                }
            }
        }
        Ok(events)
    }

    fn line(&mut self, line: &[u8]) -> Option<Event> {
        if line.is_empty() {
            if !self.has_data {
                self.current = Event::default();
                return None;
            }
            self.has_data = false;
            return Some(std::mem::take(&mut self.current));
        }
        if line[0] == b':' {
            return None;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (text.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.current.event = Some(value.to_owned()),
            "id" if !value.contains('\0') => {
                self.current.id = Some(value.to_owned());
                self.last_event_id = Some(value.to_owned());
            }
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry = value.parse().ok();
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_events_across_chunks_and_line_endings() {
        let stream =
            b": keep-alive\r\n\r\nevent: message\r\ndata: {\"a\":1}\r\n\r\ndata: x\ndata: y\n\n";
        for split in 0..stream.len() {
            let mut parser = Parser::default();
            let mut events = parser.feed(&stream[..split]).unwrap();
            events.extend(parser.feed(&stream[split..]).unwrap());
            assert_eq!(events.len(), 2, "split at {split}");
            assert_eq!(events[0].data, "{\"a\":1}");
            assert_eq!(events[0].event.as_deref(), Some("message"));
            assert_eq!(events[1].data, "x\ny");
        }
    }

    #[test]
    fn round_trips_the_encoder() {
        let mut parser = Parser::default();
        let events = parser
            .feed(&encode_message(br#"{"jsonrpc":"2.0"}"#))
            .unwrap();
        assert_eq!(events[0].data, r#"{"jsonrpc":"2.0"}"#);
        assert!(parser.feed(&keep_alive()).unwrap().is_empty());
    }

    #[test]
    fn remembers_last_event_id_and_retry() {
        let mut parser = Parser::default();
        // A priming event (an id, no data) dispatches nothing but sets the resume point.
        assert!(
            parser
                .feed(b"id: event-1\nretry: 500\ndata: \n\n")
                .unwrap()
                .len()
                <= 1
        );
        assert_eq!(parser.last_event_id(), Some("event-1"));
        assert_eq!(parser.retry(), Some(500));
        parser.feed(b"retry: soon\n\n").unwrap();
        assert_eq!(parser.retry(), Some(500));
    }

    #[test]
    fn a_resumable_stream_is_parsed_with_its_ids_and_retry() {
        let mut parser = Parser::default();
        let mut wire = priming("s.r1:0", Some(250)).to_vec();
        wire.extend_from_slice(&encode_message_with_id("s.r1:1", b"{}"));
        let events = parser.feed(&wire).unwrap();
        let data: Vec<&str> = events.iter().map(|e| e.data.as_str()).collect();
        assert_eq!(data.iter().filter(|d| !d.is_empty()).count(), 1);
        assert!(data.contains(&"{}"));
        assert_eq!(parser.last_event_id(), Some("s.r1:1"));
        assert_eq!(parser.retry(), Some(250));
        let mut plain = Parser::default();
        plain.feed(&priming("s.g2:0", None)).unwrap();
        assert_eq!(
            (plain.last_event_id(), plain.retry()),
            (Some("s.g2:0"), None)
        );
    }

    #[test]
    fn bounds_line_length() {
        let mut parser = Parser::new(8);
        assert!(parser.feed(b"data: 0123456789").is_err());
    }
}
