//! The RFC's examples for expansion, round trips through matching, the matching rules, and
//! hostile templates and URIs.

use std::collections::BTreeMap;

use super::*;

fn vars(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
    UriTemplate::parse(template)
        .unwrap()
        .matches(uri)
        .map(|v| v.into_iter().collect())
}

/// The variables of RFC 6570 §3.2 (level 4's associative arrays left out).
fn rfc_variables() -> BTreeMap<String, Value> {
    let mut v = BTreeMap::new();
    for (name, value) in [
        ("dub", "me/too"),
        ("hello", "Hello World!"),
        ("half", "50%"),
        ("var", "value"),
        ("who", "fred"),
        ("base", "http://example.com/home/"),
        ("path", "/foo/bar"),
        ("v", "6"),
        ("x", "1024"),
        ("y", "768"),
        ("empty", ""),
    ] {
        v.insert(name.to_owned(), Value::from(value));
    }
    v.insert("list".into(), Value::from(vec!["red", "green", "blue"]));
    v.insert("count".into(), Value::from(vec!["one", "two", "three"]));
    v.insert("empty_list".into(), Value::List(Vec::new()));
    v
}

#[test]
fn expands_the_rfc_examples_of_levels_1_to_3() {
    let v = rfc_variables();
    // §1.2's table, then §3.2.2 to §3.2.9 without the level 4 rows. Left out, because
    // `parse` refuses them for matching: `up{+path}{var}/here` (two adjacent variables),
    // `{.who,who}` and `{/who,who}` (a variable twice).
    let cases = [
        ("{var}", "value"),
        ("{hello}", "Hello%20World%21"),
        ("{+var}", "value"),
        ("{+hello}", "Hello%20World!"),
        ("{+path}/here", "/foo/bar/here"),
        ("here?ref={+path}", "here?ref=/foo/bar"),
        ("X{#var}", "X#value"),
        ("X{#hello}", "X#Hello%20World!"),
        ("map?{x,y}", "map?1024,768"),
        ("{x,hello,y}", "1024,Hello%20World%21,768"),
        ("{+x,hello,y}", "1024,Hello%20World!,768"),
        ("{+path,x}/here", "/foo/bar,1024/here"),
        ("{#x,hello,y}", "#1024,Hello%20World!,768"),
        ("{#path,x}/here", "#/foo/bar,1024/here"),
        ("X{.var}", "X.value"),
        ("X{.x,y}", "X.1024.768"),
        ("{/var}", "/value"),
        ("{/var,x}/here", "/value/1024/here"),
        ("{;x,y}", ";x=1024;y=768"),
        ("{;x,y,empty}", ";x=1024;y=768;empty"),
        ("{?x,y}", "?x=1024&y=768"),
        ("{?x,y,empty}", "?x=1024&y=768&empty="),
        ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
        ("{&x,y,empty}", "&x=1024&y=768&empty="),
        // §3.2.1 and §3.2.2
        ("{count}", "one,two,three"),
        ("{half}", "50%25"),
        ("O{empty}X", "OX"),
        ("O{undef}X", "OX"),
        ("?{x,empty}", "?1024,"),
        ("?{x,undef}", "?1024"),
        ("?{undef,y}", "?768"),
        ("{list}", "red,green,blue"),
        // §3.2.3
        ("{+half}", "50%25"),
        ("{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"),
        ("{+base}index", "http://example.com/home/index"),
        ("O{+empty}X", "OX"),
        ("O{+undef}X", "OX"),
        ("{+list}", "red,green,blue"),
        // §3.2.4
        ("{#half}", "#50%25"),
        ("foo{#empty}", "foo#"),
        ("foo{#undef}", "foo"),
        ("{#list}", "#red,green,blue"),
        // §3.2.5
        ("{.who}", ".fred"),
        ("{.half,who}", ".50%25.fred"),
        ("X{.empty}", "X."),
        ("X{.undef}", "X"),
        ("X{.list}", "X.red,green,blue"),
        // §3.2.6
        ("{/who}", "/fred"),
        ("{/half,who}", "/50%25/fred"),
        ("{/who,dub}", "/fred/me%2Ftoo"),
        ("{/var,empty}", "/value/"),
        ("{/var,undef}", "/value"),
        ("{/list}", "/red,green,blue"),
        // §3.2.7
        ("{;who}", ";who=fred"),
        ("{;half}", ";half=50%25"),
        ("{;empty}", ";empty"),
        ("{;v,empty,who}", ";v=6;empty;who=fred"),
        ("{;v,bar,who}", ";v=6;who=fred"),
        ("{;x,y,undef}", ";x=1024;y=768"),
        ("{;list}", ";list=red,green,blue"),
        // §3.2.8 and §3.2.9
        ("{?who}", "?who=fred"),
        ("{?half}", "?half=50%25"),
        ("{?x,y,undef}", "?x=1024&y=768"),
        ("{?list}", "?list=red,green,blue"),
        ("{&who}", "&who=fred"),
        ("{&half}", "&half=50%25"),
        ("{&list}", "&list=red,green,blue"),
        // An empty list is undefined (§2.3).
        ("a{/empty_list}b", "ab"),
    ];
    for (template, expected) in cases {
        let parsed = UriTemplate::parse(template).unwrap_or_else(|e| panic!("{template}: {e}"));
        assert_eq!(parsed.expand(&v), expected, "{template}");
    }
}

#[test]
fn expansion_encodes_utf8_and_literals() {
    let t = UriTemplate::parse("x://{a}/{+b}").unwrap();
    assert_eq!(
        t.expand(&[("a", "é/ü"), ("b", "ü/%41%zz")]),
        "x://%C3%A9%2F%C3%BC/%C3%BC/%41%25zz",
        "UTF-8 bytes encoded; `+` keeps `/` and valid triplets, encodes a broken `%`"
    );
    let literal = UriTemplate::parse("x://a b/é\"{a}").unwrap();
    assert_eq!(literal.expand(&[("a", "1")]), "x://a%20b/%C3%A9%221");
    let mut hash = std::collections::HashMap::new();
    hash.insert("a".to_owned(), "v".to_owned());
    assert_eq!(
        t.expand(&hash),
        "x://v/",
        "maps of strings are variables too"
    );
}

#[test]
fn expansions_match_back_to_their_values() {
    let templates = [
        "file:///docs/{+path}{?rev,lang}",
        "x://{a}/{b}.{c}",
        "x://{a}{/b,c}/here",
        "X{.a,b}",
        "{;a,b}/end",
        "?fixed=yes{&a}",
        "{#a,b}/here",
        "x://{a}/v{+b}/tail/{c}",
        "x://{a}/{+b}/and/{c}/{d}",
    ];
    let values = [
        "plain",
        "with space",
        "üñï©ødé",
        "a%b",
        "50%",
        "x:y@z",
        "sla/sh",
        "semi;colon",
        "dot.ted",
        "tail/and/x",
    ];
    for template in templates {
        let parsed = UriTemplate::parse(template).unwrap();
        let names: Vec<&str> = parsed.variable_names().collect();
        for i in 0..values.len() {
            let mut given = UriVariables::new();
            for (k, name) in names.iter().enumerate() {
                given.insert(
                    (*name).to_owned(),
                    values[(i + k) % values.len()].to_owned(),
                );
            }
            let uri = parsed.expand(&given);
            // RFC 6570 §1.4: a value holding its operator's separator unencoded does not come
            // back (a `.` in `{.x}`, a `,` in a `{+x,y}` list, a `/` or an ambiguous literal
            // in the multi-segment variable, a `%` kept by `+`); the others must.
            let invertible = given.values().all(|v| !v.contains('%'))
                && !(template.starts_with("X{.") && given.values().any(|v| v.contains('.')))
                && !(template.starts_with("x://{a}/{b}.") && given["b"].contains('.'))
                && !(template.contains("{+b}/and") && given["b"].contains("/and/"))
                && !(template.contains("{+b}/tail") && given["b"].contains("/tail/"));
            let matched = parsed.matches(&uri);
            if invertible {
                assert_eq!(matched.as_ref(), Some(&given), "{template} → {uri}");
            }
        }
    }
}

#[test]
fn simple_variables() {
    assert_eq!(
        vars("test://template/{id}/data", "test://template/42/data"),
        Some(vec![("id".into(), "42".into())])
    );
    assert_eq!(
        vars("test://template/{id}/data", "test://template/42/other"),
        None
    );
    assert_eq!(
        vars("test://template/{id}/data", "test://template//data"),
        None
    );
    assert_eq!(
        vars("report://{quarter}", "report://q3"),
        Some(vec![("quarter".into(), "q3".into())])
    );
    assert_eq!(
        vars("file:///{name}", "file:///a/b"),
        None,
        "simple vars exclude `/`"
    );
    assert_eq!(
        vars("file:///{+path}", "file:///a/b%20c"),
        Some(vec![("path".into(), "a/b c".into())])
    );
}

#[test]
fn query_variables() {
    assert_eq!(
        vars(
            "search://{kind}{?q,limit}",
            "search://books?q=rust&limit=5&x=1"
        ),
        Some(vec![
            ("kind".into(), "books".into()),
            ("limit".into(), "5".into()),
            ("q".into(), "rust".into())
        ])
    );
    assert_eq!(
        vars("search://{kind}{?q}", "search://books"),
        Some(vec![("kind".into(), "books".into())])
    );
    // The first of a repeated name wins; names are compared as written, never decoded.
    assert_eq!(
        vars("s://x{?q}", "s://x?%71=evil&q=real&q=later#frag"),
        Some(vec![("q".into(), "real".into())])
    );
    // A `?` in the path, so the tail is matched strictly, in order.
    assert_eq!(
        vars("s://x?fixed=1{&page}", "s://x?fixed=1&page=2"),
        Some(vec![("page".into(), "2".into())])
    );
    assert_eq!(vars("s://x?fixed=1{&page}", "s://x?page=2&fixed=1"), None);
}

#[test]
fn multi_segment_variable_takes_the_middle() {
    assert_eq!(
        vars("x://{a}/{+b}/v{c}", "x://1/2/v3/v/4/v5"),
        Some(vec![
            ("a".into(), "1".into()),
            ("b".into(), "2/v3/v/4".into()),
            ("c".into(), "5".into())
        ])
    );
    assert_eq!(
        vars("{#path,x}/here", "#/foo/bar,1024/here"),
        Some(vec![
            ("path".into(), "/foo/bar".into()),
            ("x".into(), "1024".into())
        ])
    );
    assert_eq!(vars("x://{a}/{+b}/v{c}", "x://1/v5"), None, "no room");
    // An operator's own lead character is the literal between two variables.
    assert_eq!(
        vars("file:///{+path}{.ext}", "file:///a/b.c/d.tar.gz"),
        Some(vec![
            ("ext".into(), "gz".into()),
            ("path".into(), "a/b.c/d.tar".into())
        ])
    );
    assert_eq!(
        vars("x://{+b}.{c}", "x://a.b/c"),
        None,
        "`c` starts after the last `.`, and its value may not hold `/`"
    );
}

#[test]
fn named_operators_match_empty_values() {
    assert_eq!(
        vars("a{;x,y}", "a;x;y=2"),
        Some(vec![("x".into(), "".into()), ("y".into(), "2".into())])
    );
    assert_eq!(vars("a{;x,y}", "a;xy;y=2"), None);
    assert_eq!(
        vars("a/{x}{?q}", "a/1?q"),
        Some(vec![("q".into(), "".into()), ("x".into(), "1".into())])
    );
}

#[test]
fn variable_names_in_order() {
    let template = UriTemplate::parse("file:///{+path}/v{version}{?a,b}").unwrap();
    let names: Vec<&str> = template.variable_names().collect();
    assert_eq!(names, ["path", "version", "a", "b"]);
    assert_eq!(
        UriTemplate::parse("info://hours")
            .unwrap()
            .variable_names()
            .count(),
        0
    );
}

#[test]
fn rejects_bad_templates_precisely() {
    let cases = [
        ("a{b", 1, "never closed"),
        ("a}b", 1, "without a `{`"),
        ("{a}b}", 4, "without a `{`"),
        ("{a{b}}", 2, "inside an expression"),
        ("x{}", 1, "empty expression"),
        ("{a}{b}", 3, "`a` and `b` have no literal"),
        ("{+a}{b}", 4, "`a` and `b` have no literal"),
        ("{a}{/b}{c}", 7, "`b` and `c` have no literal"),
        ("{+a}/{#b}", 5, "`a` and `b` are both multi-segment"),
        ("{a b}", 1, "not a variable name"),
        ("{a,}", 3, "empty variable name"),
        ("{x,x..y}", 3, "not a variable name"),
        ("{=a}", 1, "reserved by RFC 6570"),
        ("{/a*}", 2, "explode modifier"),
        ("{a:3}", 1, "prefix modifier"),
        ("{a}/{?a}", 4, "`a` appears twice"),
    ];
    for (template, position, reason) in cases {
        let error = UriTemplate::parse(template).expect_err(template);
        assert_eq!(error.position, position, "{template}: {error}");
        assert!(error.reason.contains(reason), "{template}: {error}");
    }
}

#[test]
fn hostile_templates_are_bounded() {
    let long = "x".repeat(MAX_TEMPLATE_LENGTH + 1);
    let error = UriTemplate::parse(&long).unwrap_err();
    assert!(error.reason.contains("longer than"), "{error}");
    assert_eq!(error.template.len(), 256, "the error keeps a bounded quote");
    assert!(UriTemplate::parse(&"x".repeat(MAX_TEMPLATE_LENGTH)).is_ok());

    let many: String = (0..=MAX_VARIABLES).map(|i| format!("{{v{i}}}/")).collect();
    assert!(
        UriTemplate::parse(&many)
            .unwrap_err()
            .reason
            .contains("more than 256")
    );
    let enough: String = (0..MAX_VARIABLES).map(|i| format!("{{v{i}}}/")).collect();
    assert!(UriTemplate::parse(&enough).is_ok());

    // Multi-byte characters at the quote's cut and in the reason stay whole.
    let error = UriTemplate::parse(&format!("{}{{é}}", "é".repeat(200))).unwrap_err();
    assert!(error.template.len() <= 256 && error.template.chars().all(|c| c == 'é'));
}

#[test]
fn hostile_uris_do_not_match() {
    let t = UriTemplate::parse("x://{a}/{+b}").unwrap();
    for uri in [
        "x://%/b",
        "x://a/%",
        "x://a/b%4",
        "x://a/%zz",
        "x://a/%C3%28",
        "x://a/%FF",
        "x://%E9/b",
        "x://",
        "y://a/b",
    ] {
        assert_eq!(t.matches(uri), None, "{uri}");
    }
    let huge = format!("x://a/{}", "b".repeat(MAX_URI_LENGTH));
    assert_eq!(t.matches(&huge), None, "longer than MAX_URI_LENGTH");
    let big = format!("x://a/{}", "b".repeat(MAX_URI_LENGTH - 10));
    assert_eq!(t.matches(&big).unwrap()["b"].len(), MAX_URI_LENGTH - 10);

    // Many near-misses: each scan resumes where the last stopped (no backtracking), and the
    // answer is still exact.
    let t = UriTemplate::parse("{a}xy{+b}xy{c}z").unwrap();
    let uri = "x".repeat(MAX_URI_LENGTH / 2);
    assert_eq!(t.matches(&uri), None);
    let uri = format!("1xy{}xy3z", "x".repeat(1000));
    let found = t.matches(&uri).unwrap();
    assert_eq!((found["a"].as_str(), found["c"].as_str()), ("1", "3"));
    assert_eq!(found["b"].len(), 1000);
}

#[test]
fn a_literal_template_matches_exactly_itself() {
    let t = UriTemplate::parse("info://hours").unwrap();
    assert_eq!(t.matches("info://hours"), Some(UriVariables::new()));
    assert_eq!(t.matches("info://hours/"), None);
    assert_eq!(t.matches("info://hour"), None);
    assert_eq!(t.expand(&UriVariables::new()), "info://hours");
}

#[test]
fn hostile_queries_are_bounded() {
    // The most names a template may have, against a URI of nothing but parameters: every pair
    // is looked at once, the first of each name is kept, the rest cost nothing more.
    let names: Vec<String> = (0..MAX_VARIABLES).map(|i| format!("q{i}")).collect();
    let t = UriTemplate::parse(&format!("s://x{{?{}}}", names.join(","))).unwrap();
    let pair = "q255=%41&";
    let uri = format!("s://x?{}", pair.repeat((MAX_URI_LENGTH - 10) / pair.len()));
    let found = t.matches(&uri).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found["q255"], "A");
    // A broken triplet in a parameter that is read fails the match; in one that is not, not.
    assert_eq!(t.matches("s://x?q1=%zz"), None);
    assert!(t.matches("s://x?other=%zz&q1=ok").is_some());
}
