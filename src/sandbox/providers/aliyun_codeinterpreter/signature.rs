//! Request signatures of Alibaba Cloud's AgentRun.
//!
//! - Data plane (sandboxes, code execution): `AGENTRUN4-HMAC-SHA256`, as the public SDK computes
//!   it (`agentrun/utils/ram_signature/signer.py`, described in the research notes, Appendix B):
//!   signed headers `host`, `x-acs-date`, `x-acs-content-sha256: UNSIGNED-PAYLOAD` and
//!   `content-type` when there is a body; the key is an HMAC chain from `"aliyun_v4" + secret`
//!   over the day, the region, `agentrun` and `aliyun_v4_request`; sent as
//!   `Agentrun-Authorization`.
//! - Control plane (templates, Alibaba Cloud OpenAPI 2025-09-10, ROA): the OpenAPI V3
//!   signature `ACS3-HMAC-SHA256`: every `x-acs-*` header, `host` and `content-type` signed,
//!   the body's SHA-256 as `x-acs-content-sha256`, HMAC keyed by the secret itself, sent as
//!   `Authorization`.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

pub const AGENTRUN4: &str = "AGENTRUN4-HMAC-SHA256";
pub const ACS3: &str = "ACS3-HMAC-SHA256";
pub const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";
const PRODUCT: &str = "agentrun";

fn hmac(key: &[u8], message: &str) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(message.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Percent-encodes everything but `A-Z a-z 0-9 - _ . ~` (RFC 3986 unreserved).
fn encode(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

/// The query as signed: pairs sorted by key, key and value encoded, `key=` for an empty value.
/// `query` is the raw (already encoded) query string of the URL.
pub fn canonical_query(query: &str) -> String {
    let mut pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (encode(&k), encode(&v)))
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// One request's parts that a signature covers. Header names are compared lower-cased.
pub struct Signed<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub query: &'a str,
    /// The headers to sign, values as sent (the signer trims them).
    pub headers: Vec<(String, String)>,
}

impl Signed<'_> {
    /// `(canonical headers, signed-header list)`: `name:value\n` lines and `a;b;c`, sorted.
    fn headers(&self) -> (String, String) {
        let mut headers: Vec<(String, String)> = self
            .headers
            .iter()
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        headers.sort();
        let lines = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
        let names = headers
            .iter()
            .map(|(k, _)| k.as_str())
            .collect::<Vec<_>>()
            .join(";");
        (lines, names)
    }

    /// The canonical request: method, path, query, headers, signed-header list, payload hash.
    pub fn canonical_request(&self, payload_hash: &str) -> String {
        let (lines, names) = self.headers();
        let path = if self.path.is_empty() { "/" } else { self.path };
        format!(
            "{}\n{path}\n{}\n{lines}\n{names}\n{payload_hash}",
            self.method.to_ascii_uppercase(),
            canonical_query(self.query)
        )
    }

    pub fn signed_header_names(&self) -> String {
        self.headers().1
    }
}

/// AGENTRUN4-HMAC-SHA256: the data plane's signature (hex) of `request`, whose headers must
/// include `host`, `x-acs-date` (`YYYY-MM-DDTHH:MM:SSZ`) and `x-acs-content-sha256`.
pub fn agentrun4_signature(request: &Signed, secret: &str, day: &str, region: &str) -> String {
    let canonical = request.canonical_request(UNSIGNED_PAYLOAD);
    let string_to_sign = format!("{AGENTRUN4}\n{}", sha256_hex(canonical.as_bytes()));
    let mut key = format!("aliyun_v4{secret}").into_bytes();
    for part in [day, region, PRODUCT, "aliyun_v4_request"] {
        key = hmac(&key, part);
    }
    hex(&hmac(&key, &string_to_sign))
}

/// The `Agentrun-Authorization` header value.
pub fn agentrun4_authorization(
    request: &Signed,
    access_key_id: &str,
    secret: &str,
    day: &str,
    region: &str,
) -> String {
    format!(
        "{AGENTRUN4} Credential={access_key_id}/{day}/{region}/{PRODUCT}/aliyun_v4_request,SignedHeaders={},Signature={}",
        request.signed_header_names(),
        agentrun4_signature(request, secret, day, region)
    )
}

/// ACS3-HMAC-SHA256: the OpenAPI V3 signature (hex) of `request` with the body's hash.
pub fn acs3_signature(request: &Signed, body_hash: &str, secret: &str) -> String {
    let canonical = request.canonical_request(body_hash);
    let string_to_sign = format!("{ACS3}\n{}", sha256_hex(canonical.as_bytes()));
    hex(&hmac(secret.as_bytes(), &string_to_sign))
}

/// The `Authorization` header value of the OpenAPI V3 signature.
pub fn acs3_authorization(
    request: &Signed,
    body_hash: &str,
    access_key_id: &str,
    secret: &str,
) -> String {
    format!(
        "{ACS3} Credential={access_key_id},SignedHeaders={},Signature={}",
        request.signed_header_names(),
        acs3_signature(request, body_hash, secret)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    // Vectors derived by hand, step by step, with Python's hashlib and hmac from the algorithm
    // as the SDK documents it (see the session notes); the first equals the research notes'
    // independently computed vector.
    #[test]
    fn agentrun4_matches_the_vector_for_an_execute_call() {
        let request = Signed {
            method: "POST",
            path: "/sandboxes/sbx1/contexts/execute",
            query: "",
            headers: headers(&[
                (
                    "Host",
                    "1234567890123456-ram.agentrun-data.cn-hangzhou.aliyuncs.com",
                ),
                ("x-acs-date", "2026-01-02T03:04:05Z"),
                ("x-acs-content-sha256", "UNSIGNED-PAYLOAD"),
                ("Content-Type", "application/json"),
            ]),
        };

        let canonical = request.canonical_request(UNSIGNED_PAYLOAD);
        let header = agentrun4_authorization(
            &request,
            "LTAI5tTESTKEY",
            "testsecret",
            "20260102",
            "cn-hangzhou",
        );

        assert_eq!(
            canonical,
            "POST\n/sandboxes/sbx1/contexts/execute\n\ncontent-type:application/json\n\
             host:1234567890123456-ram.agentrun-data.cn-hangzhou.aliyuncs.com\n\
             x-acs-content-sha256:UNSIGNED-PAYLOAD\nx-acs-date:2026-01-02T03:04:05Z\n\n\
             content-type;host;x-acs-content-sha256;x-acs-date\nUNSIGNED-PAYLOAD"
        );
        assert_eq!(
            sha256_hex(canonical.as_bytes()),
            "3579fc0cc34f5d11482874679c6c06142594857a61077845c4a7bd2c832ab3fd"
        );
        assert_eq!(
            header,
            "AGENTRUN4-HMAC-SHA256 Credential=LTAI5tTESTKEY/20260102/cn-hangzhou/agentrun/aliyun_v4_request,\
             SignedHeaders=content-type;host;x-acs-content-sha256;x-acs-date,\
             Signature=61bed70ba35067826f1bd0b6c3dc3988fc225774b1503674b31ac8e6547a7f93"
        );
    }

    #[test]
    fn agentrun4_matches_the_vector_for_a_delete_with_a_query_and_no_body() {
        let request = Signed {
            method: "delete",
            path: "/sandboxes/sbx-2",
            query: "b=x+y&a=1",
            headers: headers(&[
                ("host", "127.0.0.1:8080"),
                ("x-acs-date", "2026-12-03T10:20:30Z"),
                ("x-acs-content-sha256", " UNSIGNED-PAYLOAD "),
            ]),
        };

        assert_eq!(canonical_query(request.query), "a=1&b=x%20y");
        assert_eq!(
            agentrun4_signature(&request, "s3cr3t", "20261203", "cn-beijing"),
            "d5f725dc211658795ad8f6ef7e03cbf49e9ff07143789378870929e905011993"
        );
    }

    #[test]
    fn acs3_matches_the_vector_for_a_template_call() {
        let body = br#"{"templateName":"t"}"#;
        let body_hash = sha256_hex(body);
        let request = Signed {
            method: "POST",
            path: "/2025-09-10/templates",
            query: "",
            headers: headers(&[
                ("host", "agentrun.cn-hangzhou.aliyuncs.com"),
                ("x-acs-action", "CreateTemplate"),
                ("x-acs-version", "2025-09-10"),
                ("x-acs-date", "2026-01-02T03:04:05Z"),
                ("x-acs-signature-nonce", "3f1b0c"),
                ("x-acs-content-sha256", &body_hash),
                ("content-type", "application/json"),
            ]),
        };

        assert_eq!(
            acs3_authorization(&request, &body_hash, "LTAI5tTESTKEY", "testsecret"),
            format!("ACS3-HMAC-SHA256 Credential=LTAI5tTESTKEY,SignedHeaders=content-type;host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version,Signature={ACS3_VECTOR}")
        );
    }

    const ACS3_VECTOR: &str = "337bb24c16160decfbfe4dc5903c344d247d3e36595541b733879e1ba7dc8491";
}
