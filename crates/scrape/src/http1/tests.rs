use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;

/// One scripted answer: the bytes sent, and whether the server then closes.
struct Answer {
    bytes: Vec<u8>,
    close: bool,
}

fn answer(bytes: &str, close: bool) -> Answer {
    Answer {
        bytes: bytes.as_bytes().to_vec(),
        close,
    }
}

/// A server answering each request with the next scripted answer; counts
/// the connections it accepted and keeps the requests' heads.
struct Server {
    url: String,
    accepted: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<String>>>,
}

async fn serve(answers: Vec<Answer>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    let answers = Arc::new(Mutex::new(VecDeque::from(answers)));
    let accepted = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let (a, r) = (accepted.clone(), requests.clone());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            a.fetch_add(1, Ordering::SeqCst);
            let (answers, requests) = (answers.clone(), r.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                loop {
                    let mut chunk = [0u8; 1024];
                    let Ok(n) = socket.read(&mut chunk).await else { return };
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        requests.lock().push(String::from_utf8_lossy(&buf[..end]).into_owned());
                        buf.drain(..end + 4);
                        let Some(next) = answers.lock().pop_front() else { return };
                        if socket.write_all(&next.bytes).await.is_err() || next.close {
                            return;
                        }
                    }
                }
            });
        }
    });
    Server {
        url,
        accepted,
        requests,
    }
}

fn client(follow_redirects: bool) -> DirectClient {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let tls = crate::client::tls_config(&Default::default()).unwrap();
    DirectClient::new(tls, follow_redirects)
}

fn headers() -> Vec<(String, String)> {
    vec![("Accept".into(), "text/plain".into())]
}

#[tokio::test]
async fn a_kept_connection_serves_scrape_after_scrape_whatever_the_framing() {
    let s = serve(vec![
        answer("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nm 1\n\n", false),
        answer(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nm 2\n\r\n3\r\nn 3\r\n0\r\nTrailer: x\r\n\r\n",
            false,
        ),
        answer("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false),
        answer("HTTP/1.1 204 No Content\r\n\r\n", false),
    ])
    .await;
    let c = client(true);
    let mut session = Session::default();
    let first = c
        .get(&mut session, &s.url, headers, Vec::new(), u64::MAX)
        .await
        .unwrap();
    assert_eq!(
        (first.status, first.content_type.as_str(), &first.body[..]),
        (200, "text/plain", &b"m 1\n\n"[..])
    );
    let second = c
        .get(&mut session, &s.url, headers, Vec::new(), u64::MAX)
        .await
        .unwrap();
    assert_eq!(second.body, b"m 2\nn 3");
    let third = c
        .get(&mut session, &s.url, headers, Vec::new(), u64::MAX)
        .await
        .unwrap();
    assert_eq!((third.status, third.body.len()), (200, 0));
    let fourth = c
        .get(&mut session, &s.url, headers, Vec::new(), u64::MAX)
        .await
        .unwrap();
    assert_eq!(
        (fourth.status, fourth.body.len()),
        (204, 0),
        "no body, and no wait for one"
    );
    assert_eq!(s.accepted.load(Ordering::SeqCst), 1, "one connection for every scrape");
    let request = s.requests.lock()[0].clone();
    assert!(
        request.starts_with("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:"),
        "{request}"
    );
    assert!(request.contains("\r\nAccept: text/plain"), "{request}");
}

#[tokio::test]
async fn a_request_is_built_again_only_when_its_url_or_credentials_change() {
    let ok = || answer("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na", false);
    let s = serve(vec![ok(), ok(), ok(), ok()]).await;
    let c = client(true);
    let mut session = Session::default();
    let token = |t: &str| vec![("Authorization".to_string(), format!("Bearer {t}"))];
    let mut built = 0;
    for credentials in [token("a"), token("a"), token("b"), token("b")] {
        let count = || {
            built += 1;
            headers()
        };
        c.get(&mut session, &s.url, count, credentials, u64::MAX).await.unwrap();
    }
    assert_eq!(built, 2);
    let requests = s.requests.lock().clone();
    let sent: Vec<bool> = requests
        .iter()
        .map(|r| r.ends_with("\r\nAuthorization: Bearer b"))
        .collect();
    assert_eq!(sent, [false, false, true, true]);
    assert!(requests.iter().all(|r| r.contains("\r\nAccept: text/plain\r\n")));
}

#[tokio::test]
async fn a_connection_the_target_closed_is_opened_again() {
    let s = serve(vec![
        answer("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na", true),
        answer("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb", false),
        // Closing-delimited: read to the end, then not kept.
        answer("HTTP/1.0 200 OK\r\n\r\nuntil close", true),
        answer(
            "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nd",
            true,
        ),
        answer("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\ne", false),
    ])
    .await;
    let c = client(true);
    let mut session = Session::default();
    for want in [&b"a"[..], b"b", b"until close", b"d", b"e"] {
        let got = c
            .get(&mut session, &s.url, headers, Vec::new(), u64::MAX)
            .await
            .unwrap();
        assert_eq!(got.body, want);
    }
    assert_eq!(s.accepted.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn redirects_are_followed_when_the_job_says_so() {
    let redirect = "HTTP/1.1 302 Found\r\nLocation: /other?x=1\r\nContent-Length: 0\r\n\r\n";
    let s = serve(vec![
        answer(redirect, false),
        answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false),
        answer(redirect, false),
    ])
    .await;
    let mut session = Session::default();
    let got = client(true)
        .get(&mut session, &s.url, headers, Vec::new(), u64::MAX)
        .await
        .unwrap();
    assert_eq!(got.body, b"ok");
    assert!(s.requests.lock()[1].starts_with("GET /other?x=1 HTTP/1.1"));
    let got = client(false)
        .get(&mut session, &s.url, headers, Vec::new(), u64::MAX)
        .await
        .unwrap();
    assert_eq!(got.status, 302);
}

#[tokio::test]
async fn bodies_past_the_limit_and_bad_responses_fail_and_drop_the_connection() {
    let s = serve(vec![
        answer("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789", false),
        answer("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false),
        answer("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", true),
        answer("garbage\r\n\r\n", false),
    ])
    .await;
    let c = client(true);
    let mut session = Session::default();
    let err = c.get(&mut session, &s.url, headers, Vec::new(), 4).await.err().unwrap();
    assert_eq!(err, BODY_SIZE_LIMIT);
    assert!(session.conn.is_none());
    for want in [
        "malformed chunked encoding",
        "unexpected EOF",
        "malformed HTTP response",
    ] {
        let err = c
            .get(&mut session, &s.url, headers, Vec::new(), u64::MAX)
            .await
            .err()
            .unwrap();
        assert!(
            err.starts_with(&format!("Get {:?}: ", s.url)) && err.contains(want),
            "{err}"
        );
        assert!(session.conn.is_none());
    }
}

#[tokio::test]
async fn an_unreachable_target_fails_in_gos_words() {
    let mut session = Session::default();
    let url = "http://127.0.0.1:1/metrics";
    let err = client(true)
        .get(&mut session, url, headers, Vec::new(), u64::MAX)
        .await
        .err()
        .unwrap();
    assert_eq!(
        err,
        "Get \"http://127.0.0.1:1/metrics\": dial tcp 127.0.0.1:1: connect: connection refused"
    );
}

/// A status is three digits, as Go's client reads it: `000` is status 0,
/// a shorter code is malformed.
#[test]
fn a_status_is_three_digits() {
    assert_eq!(
        read_response(b"HTTP/1.1 000 OK\r\nContent-Length: 1\r\n\r\nx", 1, u64::MAX),
        Ok((0, b"x".to_vec()))
    );
    assert!(read_response(b"HTTP/1.1 0 OK\r\nContent-Length: 1\r\n\r\nx", 1, u64::MAX).is_err());
}

mod any_bytes {
    use proptest::prelude::*;

    use super::super::read_response;

    /// A response of `status` carrying `body`, chunked into `chunks`-byte
    /// pieces or with its length.
    fn response(status: u16, body: &[u8], chunks: Option<usize>) -> Vec<u8> {
        let mut out = format!("HTTP/1.1 {status} X\r\n").into_bytes();
        match chunks {
            Some(size) => {
                out.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                for piece in body.chunks(size.max(1)) {
                    out.extend_from_slice(format!("{:x};e=1\r\n", piece.len()).as_bytes());
                    out.extend_from_slice(piece);
                    out.extend_from_slice(b"\r\n");
                }
                out.extend_from_slice(b"0\r\nT: 1\r\n\r\n");
            }
            None => {
                out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
                out.extend_from_slice(body);
            }
        }
        out
    }

    proptest! {
        /// Whatever the bytes, how they arrive does not change what is read.
        #[test]
        fn reads_do_not_depend_on_how_the_bytes_arrive(
            bytes in proptest::collection::vec(any::<u8>(), 0..300),
            step in 1usize..64,
        ) {
            prop_assert_eq!(read_response(&bytes, step, 100), read_response(&bytes, 1 << 20, 100));
        }

        /// A response framed either way reads back as sent, arriving in any pieces.
        #[test]
        fn framed_responses_read_back(
            status in prop_oneof![Just(200u16), Just(404), Just(500)],
            body in proptest::collection::vec(any::<u8>(), 0..2000),
            chunks in proptest::option::of(1usize..700),
            step in 1usize..5000,
        ) {
            let bytes = response(status, &body, chunks);
            prop_assert_eq!(read_response(&bytes, step, u64::MAX), Ok((status, body)));
        }
    }
}
