//! Newline-delimited JSON framing (stdio, in-memory pipes, any byte stream).
//!
//! Each message is one line. Lines longer than the limit are discarded up to their newline and
//! reported, so one oversized message costs bounded memory and does not end the stream.

use std::io;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The default limit on one message: 16 MiB.
pub(crate) const DEFAULT_MAX_LINE: usize = 16 * 1024 * 1024;

/// What the reader produced.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame<'a> {
    /// One message, without its line end.
    Line(&'a [u8]),
    /// A line longer than the limit (its length so far); it was discarded.
    TooLong(usize),
}

/// The line buffer capacity kept between messages. A longer line's buffer is released after
/// it, so a caller may as well take it ([`LineReader::take_line`]) instead of copying the line.
pub(crate) const KEEP_LINE_CAPACITY: usize = 64 * 1024;

/// Reads newline-delimited messages.
#[derive(Debug)]
pub(crate) struct LineReader<R> {
    reader: BufReader<R>,
    line: Vec<u8>,
    max_line: usize,
    /// A line is being read: `line` and `discarded` hold what has arrived of it. Kept here, not
    /// in `next_frame`'s locals, so that a `next_frame` dropped while it waits for input (a
    /// `select!` that another branch won: a server's shutdown) loses nothing of the line.
    in_line: bool,
    /// How much of the current line was discarded for passing `max_line`.
    discarded: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader with the given limit on one message.
    pub(crate) fn new(reader: R, max_line: usize) -> Self {
        Self {
            reader: BufReader::with_capacity(64 * 1024, reader),
            line: Vec::new(),
            max_line,
            in_line: false,
            discarded: 0,
        }
    }

    /// Frees the line buffer if one huge message grew it past the read buffer's size.
    ///
    /// One huge message must not keep its buffer for the life of the connection (typical
    /// messages never get there, so the steady state stays allocation-free). [`next_frame`]
    /// calls it; a caller that has copied a large frame out calls it too, so the copy and the
    /// buffer do not coexist while the message is served.
    ///
    /// [`next_frame`]: Self::next_frame
    pub(crate) fn release_large_buffer(&mut self) {
        if self.line.capacity() > KEEP_LINE_CAPACITY {
            self.line = Vec::new();
        }
    }

    /// Takes the last frame's buffer (the line, trailing whitespace removed); the next frame
    /// starts a new one.
    pub(crate) fn take_line(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.line)
    }

    /// The next non-empty line; `None` at end of stream.
    ///
    /// Cancel safe: dropped before it completes, it keeps what it read of a line, and the next
    /// call goes on from there.
    ///
    /// # Errors
    /// I/O errors of the underlying reader.
    pub(crate) async fn next_frame(&mut self) -> io::Result<Option<Frame<'_>>> {
        if !self.in_line {
            self.release_large_buffer();
        }
        loop {
            if !self.in_line {
                self.line.clear();
                self.discarded = 0;
                self.in_line = true;
            }
            let mut saw_newline = false;
            loop {
                // The only await: everything read before it is in `self`.
                let available = self.reader.fill_buf().await?;
                if available.is_empty() {
                    break;
                }
                // A vectorised search: a byte-at-a-time scan costs instructions on every byte of
                // every message (BENCHMARKS.md, "Measured design choices").
                let (chunk, used, done) = match memchr::memchr(b'\n', available) {
                    Some(i) => (&available[..i], i + 1, true),
                    None => (available, available.len(), false),
                };
                if self.discarded > 0 || self.line.len() + chunk.len() > self.max_line {
                    self.discarded += self.line.len() + chunk.len();
                    self.line.clear();
                } else {
                    self.line.extend_from_slice(chunk);
                }
                self.reader.consume(used);
                if done {
                    saw_newline = true;
                    break;
                }
            }
            self.in_line = false;
            let discarded = self.discarded;
            if discarded > 0 {
                return Ok(Some(Frame::TooLong(discarded)));
            }
            if !saw_newline && self.line.is_empty() {
                return Ok(None);
            }
            while self.line.last().is_some_and(u8::is_ascii_whitespace) {
                self.line.pop();
            }
            if self.line.iter().all(u8::is_ascii_whitespace) {
                if saw_newline {
                    continue;
                }
                return Ok(None);
            }
            return Ok(Some(Frame::Line(&self.line)));
        }
    }
}

/// Writes newline-delimited messages; shared by concurrent tasks, one whole line at a time.
#[derive(Debug)]
pub(crate) struct LineWriter<W> {
    writer: Mutex<W>,
}

impl<W: AsyncWrite + Unpin> LineWriter<W> {
    /// Wraps a writer.
    pub(crate) fn new(writer: W) -> Self {
        Self {
            writer: Mutex::new(writer),
        }
    }

    /// Writes one message and a newline, then flushes.
    ///
    /// # Errors
    /// I/O errors of the underlying writer.
    pub(crate) async fn send(&self, message: &[u8]) -> io::Result<()> {
        debug_assert!(
            !message.contains(&b'\n'),
            "a framed message cannot contain a newline"
        );
        let mut writer = self.writer.lock().await;
        writer.write_all(message).await?;
        writer.write_all(b"\n").await?;
        writer.flush().await
    }

    /// Flushes and shuts the writer down (closes the pipe).
    ///
    /// # Errors
    /// I/O errors of the underlying writer.
    pub(crate) async fn shutdown(&self) -> io::Result<()> {
        self.writer.lock().await.shutdown().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<Result<Vec<u8>, usize>> {
        let mut reader = LineReader::new(input, max);
        let mut out = Vec::new();
        while let Some(frame) = reader.next_frame().await.unwrap() {
            out.push(match frame {
                Frame::Line(l) => Ok(l.to_vec()),
                Frame::TooLong(n) => Err(n),
            });
        }
        out
    }

    #[tokio::test]
    async fn splits_lines_and_skips_blank_ones() {
        let got = frames(b"a\r\n\n  \nbb\nlast", 16).await;
        assert_eq!(
            got,
            vec![Ok(b"a".to_vec()), Ok(b"bb".to_vec()), Ok(b"last".to_vec())]
        );
    }

    #[tokio::test]
    async fn a_huge_line_does_not_keep_its_buffer() {
        let mut input = vec![b'x'; 1 << 20];
        input.extend_from_slice(b"\nok\n");
        let mut reader = LineReader::new(&input[..], 2 << 20);
        assert!(
            matches!(reader.next_frame().await.unwrap(), Some(Frame::Line(l)) if l.len() == 1 << 20)
        );
        assert!(reader.line.capacity() >= 1 << 20);
        assert!(matches!(
            reader.next_frame().await.unwrap(),
            Some(Frame::Line(b"ok"))
        ));
        assert!(reader.line.capacity() <= KEEP_LINE_CAPACITY);
    }

    /// A `next_frame` dropped while half a line has arrived (and been consumed from the reader)
    /// loses none of it: the next call returns the whole line, and an oversized line's count.
    #[tokio::test]
    async fn a_dropped_next_frame_keeps_the_line_it_was_reading() {
        use std::future::Future as _;
        use std::pin::pin;
        use std::task::{Context, Waker};

        let (mut client, server) = tokio::io::duplex(64);
        let mut reader = LineReader::new(server, 8);
        fn poll_once(reader: &mut LineReader<tokio::io::DuplexStream>) {
            let mut frame = pin!(reader.next_frame());
            let polled = frame.as_mut().poll(&mut Context::from_waker(Waker::noop()));
            assert!(polled.is_pending(), "half a line is not a frame");
        }
        client.write_all(b"{\"a\":").await.unwrap();
        poll_once(&mut reader);
        client.write_all(b"1}\nnine_byte").await.unwrap();
        assert!(matches!(
            reader.next_frame().await.unwrap(),
            Some(Frame::Line(b"{\"a\":1}"))
        ));
        poll_once(&mut reader);
        client.write_all(b"s_and_more\nok\n").await.unwrap();
        assert_eq!(reader.next_frame().await.unwrap(), Some(Frame::TooLong(19)));
        assert_eq!(reader.next_frame().await.unwrap(), Some(Frame::Line(b"ok")));
    }

    #[tokio::test]
    async fn oversized_lines_are_reported_and_skipped() {
        let mut input = vec![b'x'; 100];
        input.extend_from_slice(b"\nok\n");
        let got = frames(&input, 10).await;
        assert_eq!(got, vec![Err(100), Ok(b"ok".to_vec())]);
    }
}
