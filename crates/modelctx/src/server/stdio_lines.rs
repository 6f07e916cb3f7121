//! The byte side of a stream connection: a line decoded into what it holds (a request, typed
//! or raw, a notification, a response), a huge request's params owned in place, the writer
//! task that coalesces queued messages into few writes, and stdin/stdout as non-blocking
//! pipes. It knows framing, not serving: the loop (`stdio.rs`) decides what each line means.

use std::borrow::Cow;
use std::io;
use std::ops::Range;

use modelctx_types::jsonrpc::{DecodeError, Decoded, MessageRef, NotificationRef, ResponseRef};
use modelctx_types::{ErrorCode, ErrorObject, RequestId};
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use super::typed_params::{self, OwnedRequest, Received};
use crate::transport::lines::{KEEP_LINE_CAPACITY, LineReader};

/// Decodes one line: a request (typed when its method is one the router takes; a huge one
/// keeps its params raw, to own them in place with [`request_in_place`]), a notification or a
/// response; the decoding error otherwise.
// Inlined into the loop of `stdio.rs` (another codegen unit), as `stdio_era::route` is. The
// ladder's steps are not: hinted too, they cost ~130 instructions a call over stdio and ~400
// with SSE responses (callgrind).
#[inline]
pub(super) fn decode_line(bytes: &[u8]) -> Result<Line<'_>, DecodeError> {
    let decoded = if bytes.len() > KEEP_LINE_CAPACITY {
        MessageRef::decode_slice(bytes).map(Decoded::Raw)
    } else {
        typed_params::decode(bytes)
    };
    match decoded {
        Ok(Decoded::Typed(request)) => Ok(Line::Request(Received::Typed(request))),
        Ok(Decoded::Raw(MessageRef::Request(request))) => Ok(Line::Request(Received::Raw(request))),
        Ok(Decoded::Raw(MessageRef::Notification(notification))) => {
            Ok(Line::Notification(notification))
        }
        Ok(Decoded::Raw(MessageRef::Response(response))) => Ok(Line::Response(response)),
        Err(error) => Err(error),
    }
}

/// Where `raw`, borrowed from `line`, lies in it.
pub(super) fn span_in(line: &[u8], raw: &str) -> Range<usize> {
    let start = (raw.as_ptr() as usize).saturating_sub(line.as_ptr() as usize);
    start..start + raw.len()
}

/// A huge request, owned without a second copy of its params: they stay in the bytes already
/// read, shifted to the front of the line's own buffer, so serving it holds one copy of the
/// message fewer. A request without params gives the buffer up before it is served. `Err`
/// (unreachable: the decoder read these bytes as JSON text) carries the error to answer.
pub(super) fn request_in_place<R: AsyncRead + Unpin>(
    id: RequestId,
    method: Cow<'static, str>,
    span: Option<Range<usize>>,
    lines: &mut LineReader<R>,
) -> Result<OwnedRequest, (RequestId, ErrorObject)> {
    let Some(span) = span else {
        lines.release_large_buffer();
        return Ok(OwnedRequest {
            id,
            method,
            params: None,
            typed: None,
        });
    };
    match params_in_place(lines.take_line(), span) {
        Some(params) => Ok(OwnedRequest {
            id,
            method,
            params: Some(params),
            typed: None,
        }),
        None => Err((
            id,
            ErrorObject::new(
                ErrorCode::PARSE_ERROR,
                "Parse error: params are not JSON text",
            ),
        )),
    }
}

/// The params at `span` of `line`, moved to the front of the line's buffer (no allocation).
/// `None` if those bytes are not JSON text.
fn params_in_place(mut line: Vec<u8>, span: Range<usize>) -> Option<Box<str>> {
    if span.end > line.len() {
        return None;
    }
    line.truncate(span.end);
    line.drain(..span.start);
    let text = String::from_utf8(line).ok()?;
    RawValue::from_string(text).ok().map(Box::<str>::from)
}

/// A decoded line: a request (typed or raw), a notification or a response.
pub(super) enum Line<'a> {
    Request(Received<'a>),
    Notification(NotificationRef<'a>),
    Response(ResponseRef<'a>),
}

/// How many bytes of queued messages one write carries at most (a larger message goes alone).
const BATCH: usize = 64 * 1024;

/// Drains the outbox: whatever is queued is framed into one buffer and written with one
/// `write_all` and a flush. A `BufWriter` with a `write_all` for each message and another for
/// its newline polled three futures a message where this polls one (~70 instructions a call
/// over stdio, callgrind).
pub(super) async fn write_lines<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut outbox: mpsc::Receiver<Vec<u8>>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    while let Some(message) = outbox.recv().await {
        let mut next = Some(message);
        while let Some(message) = next.take() {
            if message.len() >= BATCH {
                // A large message is written from where it is, not copied into the batch.
                if write_batch(&mut writer, &mut batch).await.is_err()
                    || writer.write_all(&message).await.is_err()
                    || writer.write_all(b"\n").await.is_err()
                {
                    return;
                }
            } else {
                batch.extend_from_slice(&message);
                batch.push(b'\n');
            }
            if batch.len() < BATCH {
                next = outbox.try_recv().ok();
            }
        }
        if write_batch(&mut writer, &mut batch).await.is_err() || writer.flush().await.is_err() {
            return;
        }
        if batch.capacity() > 4 * BATCH {
            // A burst grew it: do not keep the memory for the connection's life.
            batch = Vec::with_capacity(BATCH);
        }
    }
    let _ = writer.shutdown().await;
}

async fn write_batch<W: AsyncWrite + Unpin>(writer: &mut W, batch: &mut Vec<u8>) -> io::Result<()> {
    if !batch.is_empty() {
        writer.write_all(batch).await?;
        batch.clear();
    }
    Ok(())
}

/// Stdin and stdout as non-blocking pipes on the reactor, instead of tokio's `Stdin`/`Stdout`,
/// which run every read and write as a job on the blocking thread pool (BENCHMARKS.md,
/// "Measured design choices").
#[cfg(all(unix, feature = "stdio"))]
pub(super) mod pipes {
    use std::fs::File;
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::fs::{FileTypeExt, MetadataExt};

    use tokio::net::unix::pipe::{OpenOptions, Receiver, Sender};

    fn metadata(fd: &OwnedFd) -> Option<std::fs::Metadata> {
        let file = File::from(fd.try_clone().ok()?);
        file.metadata().ok()
    }

    /// Both ends as non-blocking pipes, when both are pipes (the reactor then reads and writes
    /// them without a blocking thread).
    ///
    /// Non-blocking mode belongs to the open file description, which a plain `dup` shares with
    /// everyone holding it: the process's own fds 0 and 1, its children (a tool spawning a
    /// command), sometimes the parent. So the pipes are first reopened through `/proc/self/fd`
    /// (Linux): a new description of the same pipe, whose mode is ours alone. Where that is not
    /// possible the shared description is used, except when stdout is the same file as stderr
    /// (logs written there could then fail with `EAGAIN`).
    pub(in crate::server) fn stdio_pipes() -> Option<(Receiver, Sender)> {
        let stdin = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
        let stdout = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
        let (input, output) = (metadata(&stdin)?, metadata(&stdout)?);
        if !input.file_type().is_fifo() || !output.file_type().is_fifo() {
            return None;
        }
        if let (Ok(receiver), Ok(sender)) = (
            OpenOptions::new().open_receiver("/proc/self/fd/0"),
            OpenOptions::new().open_sender("/proc/self/fd/1"),
        ) {
            return Some((receiver, sender));
        }
        let stderr = std::io::stderr().as_fd().try_clone_to_owned().ok()?;
        if let Some(err) = metadata(&stderr)
            && err.dev() == output.dev()
            && err.ino() == output.ino()
        {
            return None;
        }
        let receiver = Receiver::from_owned_fd(stdin).ok()?;
        let sender = Sender::from_owned_fd(stdout).ok()?;
        Some((receiver, sender))
    }
}

#[cfg(test)]
mod tests {
    use modelctx_types::jsonrpc::MessageRef;

    use tokio::io::AsyncReadExt as _;

    use super::{BATCH, params_in_place, span_in, write_lines};

    #[test]
    fn params_are_taken_from_the_line_in_place() {
        let line = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"caf\u00e9 \"x\""}}}"#.to_vec();
        let MessageRef::Request(request) = MessageRef::decode_slice(&line).unwrap() else {
            panic!("a request")
        };
        let raw = request.params.unwrap();
        let expected = raw.get().to_owned();
        let span = span_in(&line, raw.get());
        let params = params_in_place(line, span).unwrap();
        assert_eq!(&*params, expected);
        // Bytes that are not JSON text are refused, not passed on.
        assert!(params_in_place(b"{\"a\":".to_vec(), 0..5).is_none());
        assert!(params_in_place(b"{}".to_vec(), 0..9).is_none());
    }

    /// Queued messages, small and larger than a batch, come out whole, each on its own line,
    /// in order, and the writer ends with its outbox.
    #[tokio::test]
    async fn queued_messages_are_framed_in_order_whatever_their_size() {
        let (writer, mut reader) = tokio::io::duplex(1024);
        let (outbox, queued) = tokio::sync::mpsc::channel(16);
        let messages: Vec<Vec<u8>> = [10, BATCH - 1, BATCH, 3 * BATCH, 1, BATCH / 2, BATCH / 2]
            .iter()
            .enumerate()
            .map(|(i, &len)| vec![b'a' + u8::try_from(i).unwrap(); len])
            .collect();
        for message in &messages {
            outbox.send(message.clone()).await.unwrap();
        }
        drop(outbox);
        let writing = tokio::spawn(write_lines(writer, queued));
        let mut written = Vec::new();
        reader.read_to_end(&mut written).await.unwrap();
        writing.await.unwrap();
        let mut expected = Vec::new();
        for message in &messages {
            expected.extend_from_slice(message);
            expected.push(b'\n');
        }
        assert_eq!(written.len(), expected.len());
        assert!(written == expected, "framed in order");
    }
}
