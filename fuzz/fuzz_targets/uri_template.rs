//! URI templates: parsing and matching never panic, and a template without variables matches
//! exactly its own text.

#![no_main]

use libfuzzer_sys::fuzz_target;
use modelctx::uri_template::UriTemplate;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (template, uri) = text.split_once('\n').unwrap_or((text, text));
    if let Ok(compiled) = UriTemplate::parse(template) {
        let _ = compiled.matches(uri);
        if !template.contains('{') {
            assert!(
                compiled.matches(template).is_some(),
                "a literal template matches itself"
            );
        }
    }
});
