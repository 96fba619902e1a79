//! The shapes with realistic fakes and the near misses that must stay, the
//! variables' values, and the stream cut anywhere. The fakes are built
//! with `concat!` so that no scanner mistakes this file for a leak.

use std::sync::Arc;

use proptest::prelude::*;

use super::{RedactSettings, RedactStream, Redactor};
use crate::EnvPolicy;

fn shapes_only() -> Redactor {
    Redactor::new(Vec::<(String, String)>::new())
}

/// `text` masked by the shapes alone.
fn masked(text: &str) -> String {
    shapes_only().redact(text).into_owned()
}

/// Asserts that `secret` inside `before … after` is replaced by
/// `[redacted: label]` and nothing else changes.
fn assert_masked(before: &str, secret: &str, after: &str, label: &str) {
    let text = format!("{before}{secret}{after}");
    assert_eq!(
        masked(&text),
        format!("{before}[redacted: {label}]{after}"),
        "in {text:?}"
    );
}

fn assert_kept(text: &str) {
    assert_eq!(masked(text), text, "{text:?} must stay");
}

const GHP: &str = concat!("ghp", "_KkOo01rEP45I6HlP5N8Gu9RHECs8ROetAtHF");
const GHO: &str = concat!("gho", "_5dVM3VRB02r7uJWRph3du4sn5eVxhPuXpGru");
const GITHUB_PAT: &str = concat!(
    "github",
    "_pat_awHQtJzylRh4cx3OVRJ2he_jfhZuadArwm3mRPyDMEYwLIDY3tFeaEyyWXxhQ3pa7IOCUu341S3k6FUNEc"
);
const GLPAT: &str = concat!("glpat", "-lK7J20H89XcYOPvnxOKw");
const SLACK: &str = concat!(
    "xoxb",
    "-566559800371-4919133391109-BHRxa28jAb6f02iDcXbLXnYJ"
);
const AKIA: &str = concat!("AKIA", "OHVXF5TBBA5SVU7I");
const AWS_SECRET: &str = concat!("QmRX+5IzkzqHmw1qr976", "PEacdktRxUGENb+5XKIC");
const OPENAI_LEGACY: &str = concat!("sk-", "Wcskzbwfh0mP89yvpZycT3BlbkFJ2pRYiHkY6yN4We2NFmXm");
const OPENAI_PROJECT: &str = concat!(
    "sk-proj",
    "-3KKXN3EW64ZmV4uJBenuxXQ9w2qEmr1slYm4Wam4_BNx3K6E1GbMv9MbNMyN5fFG3USpzd3OFJQHSdLoxAdKh1OPn3TGSFhb8lH5MkP3QwXsNqw7VSMLKPaNui1Oxt_q0EvKv3z-pbyuRJO8SvJwkoidvsZp"
);
const ANTHROPIC: &str = concat!(
    "sk-ant",
    "-api03-8zc3WdUc5lytt_KPTAsArAoPFrfmACY6_jUHWRaizStJzFnpU0rhmd2YRGUWSCoQWvmcNHdw924YJ_kzZ3WtVgwRRWPMpAA"
);
const STRIPE: &str = concat!(
    "sk_live",
    "_ttxxXn5lWP5tLdzZG8ooHRHfWoIk2PHJG0rQWWs30L0oYk2b08Pz8LZwzNlNB5604xaRaC76K4i1xexnQXlCLua9NbWF64vSq4i"
);
const GOOGLE: &str = concat!("AIza", "ITq53uh_cGqSi9kdApukn9mQwQf6t6hawrY");
const NPM: &str = concat!("npm", "_6R7LkNesXGDkXDCKA9UYxJF3z9RVeVDiLQRm");
const PYPI: &str = concat!(
    "pypi",
    "-AgEIcHlwaS5vcmc2VKXzvUQdZUbalRmHt0W-JSzgVoUiyZRWn0lUPoNYvbVhKqv2Wet-qf0sTI3EQxa0gU_VyrCZKGJHUXk0FgECHm7lJpx9pzEVjFbNPMjXYiivawh6Gpm6WlfYD2cu4Y7R5pEKNhuhKyAElf-cvZCyb"
);
const HUGGING_FACE: &str = concat!("hf", "_DjBKjF22sWcc7Uz7iT27z9WTnVltWXKufr");
const DIGITALOCEAN: &str = concat!(
    "dop_v1",
    "_aa9e148603acd06356b6149853df23d7cbaebec3c85df8f27b09f38e0b75fd9f"
);
const SHOPIFY: &str = concat!("shpat", "_45599dea923cf50a70bb4980040a0bde");
const AGE: &str = concat!(
    "AGE-SECRET-KEY",
    "-1TDL46W33V3VAF4PVKE4Y39FW9TF7H74N47KWVQY7NRA4RNEPK7R80YSQFA"
);
const SENDGRID: &str = concat!(
    "SG",
    ".EUVHEStsKTNCi3ILOZpKCt.RHBCRPSY30oCNreHxhuHbzi-dVjdFwTnu4iIxd6qpmU"
);
const GOOGLE_CLIENT_SECRET: &str = concat!("GOCSPX", "-QlnWyhKNJjtB7pjbBBADVzW2KLfL");
const GOOGLE_OAUTH: &str = concat!(
    "ya29",
    ".a0s_pH-cdEdEVfFd_S5m9ct3_fbSlgp5VL86uQPQlvqD7byaiQYcik5P9qdtnzzIoDjpHpLiAF1vxJI032OYlL6RX2Z8zQdIC33I6h"
);
const JWT: &str = concat!(
    "eyJ",
    "hbGciOiAiSFMyNTYiLCAidHlwIjogIkpXVCJ9.eyJzdWIiOiAiMTIzNDU2Nzg5MCIsICJuYW1lIjogIkZha2UgVXNlciIsICJpYXQiOiAxNTE2MjM5MDIyfQ.S_mRqX7eCk7NvgZdd4M9Wu77G2QbPsOS0bQsAfr00L2"
);
const SLACK_HOOK_PATH: &str = "TSZMD4Q4V/BVI52MWVT/JpF9pYC8ohF6XL3FLB72sASs";
const PEM_BODY: &str = "VHYXAiNuTqc/WQb8BrocU3yhsIW9ev5T52uvzlm4+T/BZs1Q1782X//rMZYzVSlB
pC6OtdRta5FOaBetPXvlnQWK4lAZsCdN0IRnVoXWi+fuCsnPP7Z2bZTphkOqooW9
HUse/J+H41pvY0gAgQFgymtxJpE+Q2GjPI8TbMnpk5dlKfrHaPfiiWjCiUjpEPBZ
H5leTdAyWiUgPp8fG6hp==";
const SESSION_TOKEN: &str = "vvHa7msDzw7nxllXEeAkUqVCT8QLtQc8Q7X7y0csaHSFz39Ab+tfpU6yswqxarJXRsGPazTwRhRPw6rEbTpOsKIpsTSJ3Azj16zrWQmeBYZ4iBTSiIQFGzhKV+aUXi8BjBbXLEZK3nJVRv35Uv3VX4QWrVVxUyKX66tQJ+0AoRAI4kr4jWuAyH2n7EXKmXj+OcXCzl74YExbJPz9BC6ieyRymBgBQ9bS98IDVHmOtxcutujO1ekCGH5o9Mw6oVj4pdDGH25EgFgFVuYwjp30UQImQmR2kMI73hktTfLiZiBg";

fn pem(label: &str) -> String {
    format!("-----BEGIN {label}-----\n{PEM_BODY}\n-----END {label}-----")
}

#[test]
fn provider_tokens_are_masked_with_their_kind() {
    for (token, label) in [
        (GHP, "GitHub token"),
        (GHO, "GitHub token"),
        (GITHUB_PAT, "GitHub token"),
        (GLPAT, "GitLab token"),
        (SLACK, "Slack token"),
        (AKIA, "AWS access key id"),
        (OPENAI_LEGACY, "API key"),
        (OPENAI_PROJECT, "OpenAI API key"),
        (ANTHROPIC, "Anthropic API key"),
        (STRIPE, "Stripe key"),
        (GOOGLE, "Google API key"),
        (GOOGLE_CLIENT_SECRET, "Google OAuth client secret"),
        (GOOGLE_OAUTH, "Google OAuth token"),
        (NPM, "npm token"),
        (PYPI, "PyPI token"),
        (HUGGING_FACE, "Hugging Face token"),
        (DIGITALOCEAN, "DigitalOcean token"),
        (SHOPIFY, "Shopify token"),
        (AGE, "age secret key"),
        (SENDGRID, "SendGrid key"),
        (JWT, "JWT"),
    ] {
        assert_masked("", token, "", label);
        assert_masked("export TOKEN=", token, "\n", label);
        assert_masked("{\"key\": \"", token, "\"}", label);
        assert_masked("token ", token, ". Next", label);
    }
}

#[test]
fn near_misses_stay() {
    for text in [
        // A character short, or glued to a word.
        &GHP[..GHP.len() - 1],
        &format!("x{GHP}"),
        &AKIA[..19],
        &format!("{AKIA}Z"),
        &format!("MY{AKIA}"),
        &format!("{}0", &GOOGLE),
        &NPM[..39],
        &HUGGING_FACE[..36],
        // Prefixes that words and names share.
        "pip install sk-learn scikit-learn-intelex-2024",
        "disk-usage task-runner-cli desk-lamp",
        "sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx (placeholder)",
        "hf_hub_download(repo_id)",
        "ghp_ and github_pat_ are GitHub's token prefixes",
        "xoxb-your-token-here",
        "the AKIA prefix, ASIA too",
        "npm_config_cache=/tmp/npm",
        "glpat-short",
        "SG.example.com",
        "eyJhbGciOi alone is no JWT",
        // Words after Bearer and Authorization.
        "Bearer token authentication is supported",
        "Authorization: required",
        "authorization failed for user",
        "curl -H \"Authorization: Bearer $GITHUB_TOKEN\" https://api.github.com",
        // URLs without a password.
        "https://example.com:8443/path?q=1",
        "ssh://git@github.com/owner/repo.git",
        "http://[::1]:8080/",
        "git@github.com:owner/repo.git",
        "postgres://user:$PGPASSWORD@db/app",
        // PEM blocks that are not private keys.
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
        "-----BEGIN PUBLIC KEY-----",
        // AWS names without a value of the shape.
        "aws_secret_access_key = None",
        "calling the GetSessionToken operation: denied",
    ] {
        assert_kept(text);
    }
}

#[test]
fn values_next_to_their_names_are_masked() {
    assert_masked(
        "aws_secret_access_key = ",
        AWS_SECRET,
        "\n",
        "AWS secret access key",
    );
    assert_masked(
        "export AWS_SECRET_ACCESS_KEY=",
        AWS_SECRET,
        "",
        "AWS secret access key",
    );
    assert_masked(
        "    \"SecretAccessKey\": \"",
        AWS_SECRET,
        "\",",
        "AWS secret access key",
    );
    assert_masked(
        "\"SessionToken\": \"",
        SESSION_TOKEN,
        "\"",
        "AWS session token",
    );
    // 41 characters are not a secret key.
    assert_kept(&format!("aws_secret_access_key={AWS_SECRET}A"));
}

#[test]
fn headers_keep_their_scheme_and_urls_their_user() {
    assert_masked(
        "Authorization: Bearer ",
        "abc123DEF456ghi789",
        "\r\n",
        "authorization",
    );
    assert_masked(
        "> authorization: Basic ",
        "dXNlcjpwYXNzd29yZA==",
        "",
        "authorization",
    );
    assert_masked(
        "-H 'Authorization: token ",
        "f3a9c2e1d4b5a6978812",
        "'",
        "authorization",
    );
    assert_masked(
        "{\"Authorization\": \"",
        "Zm9vOmJhcg==",
        "\"}",
        "authorization",
    );
    assert_masked(
        "fetch(url, {headers: {Bearer ",
        "t0k3n-value-here",
        "}})",
        "bearer token",
    );
    assert_masked(
        "https://deploy:",
        "hunter2",
        "@git.example.com/repo.git",
        "URL password",
    );
    assert_masked(
        "DATABASE_URL=postgres://app:",
        "S3cr3t!pw",
        "@db.internal:5432/app",
        "URL password",
    );
    assert_masked(
        "curl https://hooks.slack.com/services/",
        SLACK_HOOK_PATH,
        " -d @msg.json",
        "Slack webhook",
    );
}

#[test]
fn private_key_blocks_are_masked_whole() {
    for label in [
        "RSA PRIVATE KEY",
        "PRIVATE KEY",
        "EC PRIVATE KEY",
        "OPENSSH PRIVATE KEY",
        "ENCRYPTED PRIVATE KEY",
        "PGP PRIVATE KEY BLOCK",
    ] {
        assert_masked("$ cat key\n", &pem(label), "\n$ next\n", "private key");
    }
    // Encrypted (RFC 1421 headers), inside JSON, and on one line.
    let encrypted = format!(
        "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17F5316E2BAC89\n\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----"
    );
    assert_masked("", &encrypted, "\n", "private key");
    let json = format!(
        "-----BEGIN PRIVATE KEY-----\\n{}\\n-----END PRIVATE KEY-----",
        PEM_BODY.replace('\n', "\\n")
    );
    assert_masked(
        "{\"private_key\": \"",
        &json,
        "\\n\", \"x\": 1}",
        "private key",
    );
    let one_line = format!(
        "-----BEGIN RSA PRIVATE KEY----- {} -----END RSA PRIVATE KEY-----",
        PEM_BODY.replace('\n', " ")
    );
    assert_masked("KEY=\"", &one_line, "\"", "private key");
}

#[test]
fn a_begin_line_in_prose_does_not_hide_what_follows() {
    assert_eq!(
        masked("Paste the -----BEGIN RSA PRIVATE KEY----- line here.\nThen run make.\n"),
        "Paste the [redacted: private key] line here.\nThen run make.\n"
    );
    assert_eq!(
        masked(&format!(
            "-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\nkey truncated: run make again\n"
        )),
        "[redacted: private key]\nkey truncated: run make again\n"
    );
    // A short last word counts only if the block goes on.
    assert_eq!(
        masked("-----BEGIN PRIVATE KEY-----\nMIIB\ndone now\n"),
        "[redacted: private key]\nMIIB\ndone now\n"
    );
}

#[test]
fn values_of_variables_are_masked_by_name_from_eight_characters() {
    let redactor = Redactor::new([
        ("GITHUB_TOKEN", "tok-0123456789abcdef"),
        ("SHORT_KEY", "abc1234"),
        ("DB_PASSWORD", "correct horse battery"),
    ]);
    assert_eq!(
        redactor.names().collect::<Vec<_>>(),
        ["DB_PASSWORD", "GITHUB_TOKEN"]
    );
    assert_eq!(
        redactor.redact("t=tok-0123456789abcdef p=correct horse battery s=abc1234"),
        "t=[redacted: GITHUB_TOKEN] p=[redacted: DB_PASSWORD] s=abc1234"
    );
    // Inside a longer word too: the value is what is secret.
    assert_eq!(
        redactor.redact("xtok-0123456789abcdefx"),
        "x[redacted: GITHUB_TOKEN]x"
    );
}

#[test]
fn base64_of_a_value_is_masked_at_every_alignment() {
    let value = "tok-0123456789abcdef";
    let redactor = Redactor::new([("GITHUB_TOKEN", value)]);
    for prefix in ["", "u:", "ab:"] {
        let encoded = standard_base64(format!("{prefix}{value}\n").as_bytes());
        let text = redactor.redact(&encoded).into_owned();
        assert!(
            text.contains("[redacted: GITHUB_TOKEN (base64)]"),
            "{prefix:?}: {text}"
        );
        let around = text.len() - "[redacted: GITHUB_TOKEN (base64)]".len();
        assert!(around <= 6, "at most a few characters around: {text}");
    }
}

fn standard_base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for group in bytes.chunks(3) {
        let value = group
            .iter()
            .enumerate()
            .fold(0_u32, |value, (index, &byte)| {
                value | u32::from(byte) << (16 - 8 * index)
            });
        for index in 0..4 {
            if index <= group.len() {
                out.push(ALPHABET[((value >> (18 - 6 * index)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn a_multi_line_value_is_masked_line_by_line() {
    let redactor = Redactor::new([("SSH_KEY", "first-line-secret\nsecond-line-secret\nab")]);
    assert_eq!(
        redactor.redact("first-line-secret\nsecond-line-secret\nab\n"),
        "[redacted: SSH_KEY]\n[redacted: SSH_KEY]\nab\n"
    );
}

#[test]
fn settings_pick_the_variables_by_the_drop_patterns_and_their_own() {
    let variables = [
        ("GITHUB_TOKEN", "tok-0123456789abcdef"),
        ("DATABASE_URL", "postgres://db.internal/app"),
        ("HOME", "/home/someone"),
    ];
    let settings = RedactSettings {
        env: vec!["database_*".into()],
        ..RedactSettings::default()
    };
    let redactor = settings
        .redactor(variables, &EnvPolicy::default())
        .expect("valid")
        .expect("on");
    assert_eq!(
        redactor.names().collect::<Vec<_>>(),
        ["DATABASE_URL", "GITHUB_TOKEN"]
    );
    assert!(
        RedactSettings::off()
            .redactor(variables, &EnvPolicy::default())
            .expect("valid")
            .is_none()
    );
    for bad in ["", "A=B", "PATH DIR", "a.b"] {
        let settings = RedactSettings {
            env: vec![bad.into()],
            ..RedactSettings::default()
        };
        let error = settings
            .redactor(variables, &EnvPolicy::default())
            .expect_err("refused");
        assert_eq!(
            error.to_string(),
            format!(
                "{bad:?} is not a pattern of variable names: use letters, digits, _ and the wildcards * and ?"
            )
        );
    }
}

#[test]
fn the_wire_form_carries_the_values_and_debug_shows_only_names() {
    let redactor = Redactor::new([("GITHUB_TOKEN", "tok-0123456789abcdef")]);
    let again = Redactor::from_wire(&redactor.to_wire()).expect("parses");
    assert_eq!(
        again.redact("tok-0123456789abcdef"),
        "[redacted: GITHUB_TOKEN]"
    );
    let debug = format!("{redactor:?}");
    assert!(
        debug.contains("GITHUB_TOKEN") && !debug.contains("tok-0123"),
        "{debug}"
    );
    assert!(Redactor::from_wire("something else").is_none());
}

/// The stream's output for `chunks`, finished, and how many it masked.
fn streamed(redactor: &Arc<Redactor>, chunks: &[&[u8]]) -> (Vec<u8>, u64) {
    let mut stream = RedactStream::new(Arc::clone(redactor));
    let mut out = Vec::new();
    for chunk in chunks {
        stream.push(chunk, |decided| out.extend_from_slice(decided));
    }
    stream.finish(|decided| out.extend_from_slice(decided));
    (out, stream.masked())
}

/// What one push hands on.
fn pushed(stream: &mut RedactStream, input: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    stream.push(input, |decided| out.extend_from_slice(decided));
    out
}

#[test]
fn a_secret_printed_in_pieces_is_masked() {
    let redactor = Arc::new(Redactor::new([("API_TOKEN", "tok-0123456789abcdef")]));
    let (out, count) = streamed(
        &redactor,
        &[b"before tok-01234", b"56789a", b"bcdef after\n"],
    );
    assert_eq!(out, b"before [redacted: API_TOKEN] after\n");
    assert_eq!(count, 1);
    // A piece of 8 or more characters that the stream ends with.
    let (out, _) = streamed(&redactor, &[b"tok-0123456"]);
    assert_eq!(out, b"[redacted: API_TOKEN]");
    let (out, _) = streamed(&redactor, &[b"tok-012"]);
    assert_eq!(out, b"tok-012");
}

#[test]
fn nothing_is_held_back_without_a_reason() {
    let redactor = Arc::new(Redactor::new([("API_TOKEN", "tok-0123456789abcdef")]));
    let mut stream = RedactStream::new(redactor);
    assert_eq!(pushed(&mut stream, b"Password: "), b"Password: ");
    assert_eq!(pushed(&mut stream, b"$ "), b"$ ");
    // The start of a token is held until its end shows.
    assert_eq!(pushed(&mut stream, b"key ghp_abc"), b"key ");
    assert!(stream.is_holding());
    assert_eq!(pushed(&mut stream, b" done\n"), b"ghp_abc done\n");
}

#[test]
fn a_stream_written_a_byte_at_a_time_is_masked_as_the_whole() {
    let redactor = Arc::new(Redactor::new([("API_TOKEN", "tok-0123456789abcdef")]));
    let text = format!(
        "a {GHP} b\n{}\ntok-0123456789abcdef {JWT}\n-----BEGIN PRIVATE KEY-----\nMIIB\nend tok-01234567",
        pem("RSA PRIVATE KEY")
    );
    let bytes: Vec<&[u8]> = text.as_bytes().chunks(1).collect();
    let (out, count) = streamed(&redactor, &bytes);
    let (whole, whole_count) = redactor.redact_counted(&text);
    assert_eq!(String::from_utf8_lossy(&out), whole);
    assert_eq!(count, whole_count as u64);
    assert_eq!(
        whole,
        "a [redacted: GitHub token] b\n[redacted: private key]\n[redacted: API_TOKEN] [redacted: JWT]\n[redacted: private key]\nMIIB\nend [redacted: API_TOKEN]"
    );
}

/// Texts that mix secrets, near misses and ordinary text.
fn sample() -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        Just("ordinary text ".to_owned()),
        Just("\n".to_owned()),
        Just("tok-0123456789abcdef".to_owned()),
        Just("tok-0123".to_owned()),
        Just(GHP.to_owned()),
        Just(GHP[..20].to_owned()),
        Just(SLACK.to_owned()),
        Just(JWT.to_owned()),
        Just(pem("RSA PRIVATE KEY")),
        Just("-----BEGIN PRIVATE KEY-----\nMIIB\n".to_owned()),
        Just("Authorization: Bearer abc123DEF456\r\n".to_owned()),
        Just("https://u:pw@host/ ".to_owned()),
        Just("sk-".to_owned()),
        Just("x".to_owned()),
        Just("-".to_owned()),
        Just(AKIA.to_owned()),
        Just("é🦀".to_owned()),
        Just(standard_base64(b"tok-0123456789abcdef")),
    ];
    proptest::collection::vec(pieces, 1..12).prop_map(|pieces| pieces.concat())
}

proptest! {
    #[test]
    fn cutting_the_stream_anywhere_changes_nothing(
        text in sample(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let redactor = Arc::new(Redactor::new([("API_TOKEN", "tok-0123456789abcdef")]));
        let bytes = text.as_bytes();
        let (whole, whole_count) = streamed(&redactor, &[bytes]);
        let (expected, expected_count) = redactor.redact_counted(&text);
        prop_assert_eq!(&whole, expected.as_bytes());
        prop_assert_eq!(whole_count, expected_count as u64);
        let mut positions: Vec<usize> = cuts.iter().map(|cut| cut.index(bytes.len() + 1)).collect();
        positions.sort_unstable();
        positions.dedup();
        let mut chunks = Vec::new();
        let mut from = 0;
        for position in positions {
            chunks.push(&bytes[from..position]);
            from = position;
        }
        chunks.push(&bytes[from..]);
        let (cut, cut_count) = streamed(&redactor, &chunks);
        prop_assert_eq!(String::from_utf8_lossy(&cut), String::from_utf8_lossy(&whole));
        prop_assert_eq!(cut_count, whole_count);
    }

    #[test]
    fn any_bytes_pass_without_a_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let redactor = Arc::new(Redactor::new([("API_TOKEN", "tok-0123456789abcdef")]));
        let (whole, _) = streamed(&redactor, &[&bytes]);
        let halves = bytes.split_at(bytes.len() / 2);
        let (cut, _) = streamed(&redactor, &[halves.0, halves.1]);
        prop_assert_eq!(whole, cut);
    }
}
