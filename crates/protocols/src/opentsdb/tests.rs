use super::*;

fn flat(batch: &crate::WriteBatch) -> Vec<(String, i64, f64)> {
    batch
        .to_series()
        .iter()
        .flat_map(|s| s.samples.iter().map(|x| (s.labels.to_string(), x.t, x.v)))
        .collect()
}

fn telnet(body: &str) -> TelnetResult {
    decode_telnet(body.as_bytes(), &DecodeLimits::default())
}

#[test]
fn telnet_put_lines() {
    let r = telnet(
        "put sys.cpu.user 1700000000 42.5 host=web01 cpu=0\n\
         put sys.cpu.user 1700000000123 7 host=web01 cpu=1\r\n\
         put sys.load 1700000000.25 -1e3\n\
         \n\
         version\n",
    );
    assert_eq!(r.import.first_error, None);
    assert_eq!(r.replies, vec![TelnetReply::Version]);
    assert_eq!(
        flat(&r.import.batch),
        vec![
            (r#"sys.cpu.user{cpu="0", host="web01"}"#.into(), 1_700_000_000_000, 42.5),
            (r#"sys.cpu.user{cpu="1", host="web01"}"#.into(), 1_700_000_000_123, 7.0),
            (r#"sys.load"#.into(), 1_700_000_000_250, -1000.0),
        ]
    );
}

#[test]
fn telnet_errors_are_answered_per_line() {
    let r = telnet(
        "put m 1 1 a=b\nput m\nput m x 1\nput m 1 NaN\nput m 1 1 novalue\nput m 1 1 =v\nstats\nput m 2 2\nput m -5 1\n",
    );
    assert_eq!(r.import.batch.series_count(), 2);
    assert_eq!(r.import.bad_lines, 7);
    let errors: Vec<String> = r
        .replies
        .iter()
        .map(|x| match x {
            TelnetReply::Error(e) => e.clone(),
            TelnetReply::Version => "version".into(),
        })
        .collect();
    assert_eq!(
        errors,
        vec![
            "put: want put <metric> <timestamp> <value> [<tagk>=<tagv> ...]",
            "put: invalid timestamp \"x\"",
            "put: invalid value \"NaN\"",
            "put: tag \"novalue\" is not tagk=tagv",
            "put: tag \"=v\" has an empty key or value",
            "unknown command: stats.  Try `put'.",
            "put: invalid timestamp \"-5\"",
        ]
    );
}

#[test]
fn seconds_and_milliseconds_are_told_apart_as_opentsdb_does() {
    assert_eq!(timestamp_ms("0"), Ok(0));
    assert_eq!(timestamp_ms("4294967295"), Ok(4_294_967_295_000));
    assert_eq!(timestamp_ms("4294967296"), Ok(4_294_967_296));
    assert_eq!(timestamp_ms("1700000000.5"), Ok(1_700_000_000_500));
    for bad in ["", "-1", "1e9", "0x10", "abc", "1.2.3", "1700000000123.5", ".5"] {
        assert!(timestamp_ms(bad).is_err(), "{bad}");
    }
    for bad in ["inf", "-Infinity", "NaN", "1i", ""] {
        assert!(value_of(bad).is_err(), "{bad}");
    }
    assert_eq!(value_of("-0"), Ok(-0.0));
    assert_eq!(value_of("12345678901234567890"), Ok(12345678901234567890.0));
}

#[test]
fn api_put_object_and_array() {
    let one = decode_put(
        br#"{"metric":"sys.cpu","timestamp":1700000000,"value":42.5,"tags":{"host":"a"}}"#,
        &DecodeLimits::default(),
    );
    assert_eq!(one.success, 1);
    assert_eq!(
        flat(&one.import.batch),
        vec![(r#"sys.cpu{host="a"}"#.into(), 1_700_000_000_000, 42.5)]
    );
    let many = decode_put(
        br#"[
            {"metric":"a","timestamp":1700000000123,"value":"7","tags":{"x":"1"}},
            {"metric":"b","timestamp":"1700000000","value":1e3},
            {"metric":"","timestamp":1,"value":1},
            {"metric":"c","value":1},
            {"metric":"c","timestamp":1,"value":"NaN"},
            {"metric":"c","timestamp":1,"value":1,"tags":{"n":1}},
            {"metric":"c","timestamp":1,"value":1,"tags":[]},
            {"metric":"c","timestamp":1.5,"value":true},
            7
        ]"#,
        &DecodeLimits::default(),
    );
    assert_eq!(many.success, 2);
    assert_eq!(
        flat(&many.import.batch),
        vec![
            (r#"a{x="1"}"#.into(), 1_700_000_000_123, 7.0),
            (r#"b"#.into(), 1_700_000_000_000, 1000.0),
        ]
    );
    let reasons: Vec<&str> = many.errors.iter().map(|(_, r)| r.as_str()).collect();
    assert_eq!(
        reasons,
        vec![
            "missing or empty \"metric\"",
            "missing \"timestamp\"",
            "invalid value \"NaN\"",
            "tag \"n\" has a non-string value",
            "\"tags\" is not an object",
            "\"value\" is not a number or a numeric string",
            "want a data point object",
        ]
    );
    // The refused point is returned as sent, for `?details`.
    assert_eq!(many.errors[1].0["metric"], "c");
    assert_eq!(many.import.bad_lines, 7);
    assert_eq!(many.import.first_error.as_ref().map(|e| e.line), Some(3));
}

#[test]
fn api_put_bodies_that_are_not_data_points() {
    for body in [&b""[..], b"{", b"\"x\"", b"null"] {
        let r = decode_put(body, &DecodeLimits::default());
        assert_eq!((r.success, r.import.bad_lines), (0, 1), "{body:?}");
    }
    let empty = decode_put(b"[]", &DecodeLimits::default());
    assert_eq!((empty.success, empty.import.bad_lines), (0, 0));
}
