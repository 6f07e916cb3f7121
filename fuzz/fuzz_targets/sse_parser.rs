//! The SSE parser must never panic, never exceed its line bound, and must produce the same events
//! however the input is split into chunks.

#![no_main]

use libfuzzer_sys::fuzz_target;
use modelctx::__fuzz::SseParser as Parser;

fuzz_target!(|data: &[u8]| {
    let Some((&split, stream)) = data.split_first() else {
        return;
    };
    let whole = Parser::new(4096).feed(stream);
    let mut parser = Parser::new(4096);
    let mut chunked = Vec::new();
    let mut failed = false;
    for chunk in stream.chunks(usize::from(split).max(1)) {
        match parser.feed(chunk) {
            Ok(events) => chunked.extend(events),
            Err(_) => {
                failed = true;
                break;
            }
        }
    }
    match whole {
        Ok(events) if !failed => assert_eq!(events, chunked, "chunking changed the events"),
        Ok(_) => panic!("a line limit hit only when chunked"),
        Err(_) => assert!(failed, "a line limit hit only when whole"),
    }
});
