//! Well-known credential shapes: each starts with a fixed anchor (a
//! provider's documented prefix, a header name, `://`), which the
//! multi-pattern search finds; the check here then reads the bytes after
//! it (lengths, alphabets, boundaries) and says whether they are a
//! credential, which part to replace, and under which name.
//!
//! Every check is a function of the bytes from its anchor on (and of the
//! one byte before it): it answers [`Verdict::More`] whenever the answer
//! could depend on bytes not there yet, so a stream cut anywhere is masked
//! exactly as the whole text is.

use super::pem;
use super::verdict::{Text, Verdict, is_alphanumeric, is_base64, is_word};

/// Which bytes a token's body is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Chars {
    /// `A-Z a-z 0-9`.
    Alphanumeric,
    /// `A-Z a-z 0-9 _`.
    Word,
    /// `A-Z a-z 0-9 -`.
    Dashed,
    /// `A-Z a-z 0-9 _ -` (base64url).
    Url,
    /// `A-Z a-z 0-9 _ - .` (a trailing `.` is the sentence's, not the token's).
    Dotted,
    /// `A-Z 0-9`.
    Upper,
    /// `a-f 0-9`.
    LowerHex,
    /// `a-f A-F 0-9`.
    Hex,
}

impl Chars {
    fn contains(self, byte: u8) -> bool {
        match self {
            Self::Alphanumeric => byte.is_ascii_alphanumeric(),
            Self::Word => is_word(byte),
            Self::Dashed => byte.is_ascii_alphanumeric() || byte == b'-',
            Self::Url => is_url_safe(byte),
            Self::Dotted => is_url_safe(byte) || byte == b'.',
            Self::Upper => byte.is_ascii_uppercase() || byte.is_ascii_digit(),
            Self::LowerHex => byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte),
            Self::Hex => byte.is_ascii_hexdigit(),
        }
    }
}

fn is_url_safe(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-'
}

/// A token: its anchor (the prefix), then `min..=max` bytes of `chars`,
/// not glued to a word before or a letter or digit after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    chars: Chars,
    min: usize,
    max: usize,
    label: &'static str,
    /// The body must look random (letters and digits mixed, a long run of
    /// them): for prefixes that words also start with (`sk-`, `xoxb-`).
    random: bool,
}

/// Which value follows a variable or key name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Named {
    /// 40 base64 characters.
    AwsSecretKey,
    /// 100 or more base64 characters.
    AwsSessionToken,
}

/// What an anchor starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Token(Token),
    /// A PEM private key block (`-----BEGIN … PRIVATE KEY-----`), masked whole.
    PrivateKey,
    /// The value after a name (`aws_secret_access_key = …`).
    Named(Named),
    /// The credential of an `Authorization:` header.
    Authorization,
    /// The token after `Bearer `.
    Bearer,
    /// The password of `scheme://user:password@host`.
    UrlPassword,
    /// A JSON Web Token (`eyJ….eyJ….…`).
    Jwt,
    /// The secret path of a Slack incoming webhook.
    SlackWebhook,
    /// `SG.` + 22 + `.` + 43.
    SendGrid,
}

const fn token(chars: Chars, min: usize, max: usize, label: &'static str) -> Kind {
    Kind::Token(Token {
        chars,
        min,
        max,
        label,
        random: false,
    })
}

const fn random_token(chars: Chars, min: usize, max: usize, label: &'static str) -> Kind {
    Kind::Token(Token {
        chars,
        min,
        max,
        label,
        random: true,
    })
}

const GITHUB: Kind = token(Chars::Alphanumeric, 36, 251, "GitHub token");
const GITLAB: Kind = token(Chars::Dotted, 20, 300, "GitLab token");
const SLACK: Kind = random_token(Chars::Dashed, 20, 255, "Slack token");
const AWS_KEY_ID: Kind = token(Chars::Upper, 16, 16, "AWS access key id");
const OPENAI: Kind = random_token(Chars::Url, 32, 400, "OpenAI API key");
const STRIPE: Kind = token(Chars::Alphanumeric, 24, 247, "Stripe key");
const DIGITALOCEAN: Kind = token(Chars::LowerHex, 64, 64, "DigitalOcean token");
const SHOPIFY: Kind = token(Chars::Hex, 32, 32, "Shopify token");
const AWS_SECRET: Kind = Kind::Named(Named::AwsSecretKey);
const AWS_SESSION: Kind = Kind::Named(Named::AwsSessionToken);

/// Every anchor and what it starts. Case variants are listed rather than
/// matched ignoring case, which would take the search off its SIMD path;
/// where two variants differ in their first letter only, the anchor leaves
/// it out (`ecretAccessKey`, `uthorization`). They stay within one Teddy
/// group (64 literals).
/// Sources: the providers' documentation of their token formats (GitHub's
/// `ghp_`/`github_pat_`, GitLab's `glpat-` family, Slack's `xox?-`, AWS
/// key ids, OpenAI's and Anthropic's `sk-`, Stripe, Google, npm, PyPI,
/// Hugging Face, DigitalOcean, Shopify, SendGrid, age), RFC 7468 (PEM),
/// RFC 7519 (JWT), RFC 6750 (bearer tokens) and RFC 3986 (user info).
pub(crate) const ANCHORS: &[(&str, Kind)] = &[
    ("-----BEGIN ", Kind::PrivateKey),
    ("ghp_", GITHUB),
    ("gho_", GITHUB),
    ("ghu_", GITHUB),
    ("ghs_", GITHUB),
    ("ghr_", GITHUB),
    ("github_pat_", token(Chars::Word, 70, 244, "GitHub token")),
    ("glpat-", GITLAB),
    ("gldt-", GITLAB),
    ("glrt-", GITLAB),
    ("glptt-", GITLAB),
    ("gloas-", GITLAB),
    ("xoxb-", SLACK),
    ("xoxp-", SLACK),
    ("xoxa-", SLACK),
    ("xoxr-", SLACK),
    ("xoxe-", SLACK),
    ("hooks.slack.com/services/", Kind::SlackWebhook),
    ("AKIA", AWS_KEY_ID),
    ("ASIA", AWS_KEY_ID),
    ("aws_secret_access_key", AWS_SECRET),
    ("AWS_SECRET_ACCESS_KEY", AWS_SECRET),
    ("ecretAccessKey", AWS_SECRET),
    ("aws_session_token", AWS_SESSION),
    ("AWS_SESSION_TOKEN", AWS_SESSION),
    ("essionToken", AWS_SESSION),
    ("sk-", random_token(Chars::Url, 32, 400, "API key")),
    ("sk-proj-", OPENAI),
    ("sk-svcacct-", OPENAI),
    ("sk-admin-", OPENAI),
    (
        "sk-ant-",
        random_token(Chars::Url, 32, 400, "Anthropic API key"),
    ),
    ("sk_live_", STRIPE),
    ("rk_live_", STRIPE),
    ("sk_test_", STRIPE),
    ("rk_test_", STRIPE),
    (
        "whsec_",
        token(Chars::Alphanumeric, 32, 128, "Stripe webhook secret"),
    ),
    ("AIza", token(Chars::Url, 35, 35, "Google API key")),
    (
        "GOCSPX-",
        token(Chars::Url, 28, 28, "Google OAuth client secret"),
    ),
    (
        "ya29.",
        random_token(Chars::Url, 20, 2048, "Google OAuth token"),
    ),
    ("npm_", token(Chars::Alphanumeric, 36, 36, "npm token")),
    ("pypi-Ag", token(Chars::Url, 50, 4096, "PyPI token")),
    (
        "hf_",
        token(Chars::Alphanumeric, 34, 34, "Hugging Face token"),
    ),
    ("dop_v1_", DIGITALOCEAN),
    ("doo_v1_", DIGITALOCEAN),
    ("dor_v1_", DIGITALOCEAN),
    ("shpat_", SHOPIFY),
    ("shpss_", SHOPIFY),
    (
        "AGE-SECRET-KEY-1",
        token(Chars::Upper, 58, 58, "age secret key"),
    ),
    ("SG.", Kind::SendGrid),
    ("eyJ", Kind::Jwt),
    ("uthorization", Kind::Authorization),
    ("AUTHORIZATION", Kind::Authorization),
    ("Bearer ", Kind::Bearer),
    ("bearer ", Kind::Bearer),
    ("BEARER ", Kind::Bearer),
    ("://", Kind::UrlPassword),
];

/// The check of `kind` for its anchor at `start..anchor_end`.
pub(crate) fn check(kind: Kind, text: &Text<'_>, start: usize, anchor_end: usize) -> Verdict {
    match kind {
        Kind::Token(token) => check_token(token, text, start, anchor_end),
        Kind::PrivateKey => pem::private_key(text, start, anchor_end),
        Kind::Named(named) => named_value(named, text, anchor_end),
        Kind::Authorization => authorization(text, anchor_end),
        Kind::Bearer => bearer(text, start, anchor_end),
        Kind::UrlPassword => url_password(text, start, anchor_end),
        Kind::Jwt => jwt(text, start),
        Kind::SlackWebhook => slack_webhook(text, anchor_end),
        Kind::SendGrid => sendgrid(text, start, anchor_end),
    }
}

/// The end of the run of `belongs` bytes from `from`, looking at no more
/// than `limit` of them (a run that long is reported as `from + limit`).
fn run_end(bytes: &[u8], from: usize, limit: usize, belongs: impl Fn(u8) -> bool) -> usize {
    let stop = bytes.len().min(from.saturating_add(limit));
    bytes[from..stop]
        .iter()
        .position(|&byte| !belongs(byte))
        .map_or(stop, |length| from + length)
}

fn check_token(token: Token, text: &Text<'_>, start: usize, anchor_end: usize) -> Verdict {
    let bytes = text.bytes;
    if is_word(text.byte_before(start)) {
        return Verdict::No;
    }
    let end = run_end(bytes, anchor_end, token.max + 1, |byte| {
        token.chars.contains(byte)
    });
    let decide = |end: usize| {
        let mut body = &bytes[anchor_end..end];
        if token.chars == Chars::Dotted {
            while let [rest @ .., b'.'] = body {
                body = rest;
            }
        }
        let after = bytes.get(anchor_end + body.len()).copied().unwrap_or(b' ');
        if (token.min..=token.max).contains(&body.len())
            && !is_alphanumeric(after)
            && (!token.random || looks_random(body))
        {
            Verdict::Mask {
                start,
                end: anchor_end + body.len(),
                label: token.label,
            }
        } else {
            Verdict::No
        }
    };
    if end == bytes.len() && end - anchor_end <= token.max {
        return text.at_end(|| decide(end));
    }
    decide(end)
}

/// Letters and digits mixed, with a run of 16 or more of them: a random
/// key, not a hyphenated name (`sk-learn-intelex`) or a placeholder
/// (`sk-xxxxxxxx…`).
fn looks_random(body: &[u8]) -> bool {
    let digit = body.iter().any(u8::is_ascii_digit);
    let letter = body.iter().any(u8::is_ascii_alphabetic);
    let longest_run = body
        .split(|byte| !byte.is_ascii_alphanumeric())
        .map(<[u8]>::len)
        .max()
        .unwrap_or(0);
    digit && letter && longest_run >= 16
}

/// A credential rather than a word: 8 or more characters with a digit, a
/// symbol, or a capital after the first character.
fn looks_like_credential(credential: &[u8]) -> bool {
    credential.len() >= 8
        && (credential.iter().any(u8::is_ascii_digit)
            || credential.iter().any(|byte| !byte.is_ascii_alphanumeric())
            || credential[1..].iter().any(u8::is_ascii_uppercase)
                && credential.iter().any(u8::is_ascii_lowercase))
}

/// RFC 6750's b64token characters.
fn is_token68(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

/// The position after the blanks (spaces, tabs) from `from`.
fn skip_blanks(bytes: &[u8], from: usize) -> usize {
    run_end(bytes, from, usize::MAX, |byte| {
        byte == b' ' || byte == b'\t'
    })
}

/// The position after an optional quote at `from`.
fn skip_quote(bytes: &[u8], from: usize) -> usize {
    match bytes.get(from) {
        Some(b'"' | b'\'') => from + 1,
        _ => from,
    }
}

/// After a name: an optional closing quote, blanks, `:` or `=` (or `=>`),
/// blanks, an optional opening quote. Where the value starts, `Err(More)`
/// when the text ends before that is known, `Err(No)` when no separator.
fn value_start(text: &Text<'_>, name_end: usize) -> Result<usize, Verdict> {
    let bytes = text.bytes;
    let mut at = skip_blanks(bytes, skip_quote(bytes, name_end));
    match bytes.get(at) {
        None => return Err(text.at_end(|| Verdict::No)),
        Some(b':' | b'=') => at += 1,
        Some(_) => return Err(Verdict::No),
    }
    if bytes.get(at) == Some(&b'>') {
        at += 1;
    }
    at = skip_blanks(bytes, at);
    at = skip_quote(bytes, at);
    if at >= bytes.len() {
        return Err(text.at_end(|| Verdict::No));
    }
    Ok(at)
}

fn named_value(named: Named, text: &Text<'_>, name_end: usize) -> Verdict {
    let bytes = text.bytes;
    let start = match value_start(text, name_end) {
        Ok(start) => start,
        Err(verdict) => return verdict,
    };
    let (belongs, min, max, label): (fn(u8) -> bool, usize, usize, &'static str) = match named {
        Named::AwsSecretKey => (
            |byte| byte.is_ascii_alphanumeric() || byte == b'+' || byte == b'/',
            40,
            40,
            "AWS secret access key",
        ),
        Named::AwsSessionToken => (is_base64, 100, 8192, "AWS session token"),
    };
    let end = run_end(bytes, start, max + 1, belongs);
    let decide = |end: usize| {
        let after = bytes.get(end).copied().unwrap_or(b' ');
        if (min..=max).contains(&(end - start)) && !is_base64(after) {
            Verdict::Mask { start, end, label }
        } else {
            Verdict::No
        }
    };
    if end == bytes.len() && end - start <= max {
        return text.at_end(|| decide(end));
    }
    decide(end)
}

fn authorization(text: &Text<'_>, name_end: usize) -> Verdict {
    let bytes = text.bytes;
    let first = match value_start(text, name_end) {
        Ok(start) => start,
        Err(verdict) => return verdict,
    };
    let first_end = run_end(bytes, first, 8192, is_token68);
    if first_end == bytes.len() {
        return text.at_end(|| credential(first, first_end, bytes));
    }
    if first_end == first {
        return Verdict::No;
    }
    // `Scheme credential`, or the credential alone.
    let second = skip_blanks(bytes, first_end);
    if second == first_end {
        return credential(first, first_end, bytes);
    }
    if second == bytes.len() {
        return text.at_end(|| credential(first, first_end, bytes));
    }
    let second_end = run_end(bytes, second, 8192, is_token68);
    if second_end == bytes.len() {
        return text.at_end(|| credential(second, second_end, bytes));
    }
    if second_end == second {
        return credential(first, first_end, bytes);
    }
    credential(second, second_end, bytes)
}

fn credential(start: usize, end: usize, bytes: &[u8]) -> Verdict {
    if looks_like_credential(&bytes[start..end]) {
        Verdict::Mask {
            start,
            end,
            label: "authorization",
        }
    } else {
        Verdict::No
    }
}

fn bearer(text: &Text<'_>, start: usize, anchor_end: usize) -> Verdict {
    let bytes = text.bytes;
    if is_alphanumeric(text.byte_before(start)) {
        return Verdict::No;
    }
    let from = skip_blanks(bytes, anchor_end);
    let end = run_end(bytes, from, 8192, is_token68);
    let decide = || {
        if looks_like_credential(&bytes[from..end]) {
            Verdict::Mask {
                start: from,
                end,
                label: "bearer token",
            }
        } else {
            Verdict::No
        }
    };
    if end == bytes.len() {
        return text.at_end(decide);
    }
    decide()
}

/// How far past `://` the user info is looked for.
const MAX_AUTHORITY: usize = 512;

fn url_password(text: &Text<'_>, start: usize, anchor_end: usize) -> Verdict {
    let bytes = text.bytes;
    if !is_alphanumeric(text.byte_before(start)) {
        return Verdict::No;
    }
    let end = run_end(bytes, anchor_end, MAX_AUTHORITY, |byte| {
        !byte.is_ascii_whitespace()
            && !byte.is_ascii_control()
            && !matches!(
                byte,
                b'/' | b'?' | b'#' | b'"' | b'\'' | b'<' | b'>' | b'`' | b'\\' | b'(' | b')'
            )
    });
    let decide = |end: usize| {
        let authority = &bytes[anchor_end..end];
        let Some(at) = memchr::memrchr(b'@', authority) else {
            return Verdict::No;
        };
        let Some(colon) = memchr::memchr(b':', &authority[..at]) else {
            return Verdict::No;
        };
        let password = &authority[colon + 1..at];
        let host = &authority[at + 1..];
        if password.is_empty()
            || matches!(password[0], b'$' | b'{' | b'*')
            || !host
                .first()
                .is_some_and(|&byte| is_alphanumeric(byte) || byte == b'[')
        {
            return Verdict::No;
        }
        Verdict::Mask {
            start: anchor_end + colon + 1,
            end: anchor_end + at,
            label: "URL password",
        }
    };
    if end == bytes.len() && end - anchor_end < MAX_AUTHORITY {
        return text.at_end(|| decide(end));
    }
    decide(end)
}

/// The longest JWT looked at.
const MAX_JWT: usize = 16 * 1024;

fn jwt(text: &Text<'_>, start: usize) -> Verdict {
    let bytes = text.bytes;
    if is_url_safe(text.byte_before(start)) || text.byte_before(start) == b'.' {
        return Verdict::No;
    }
    let limit = |from: usize| MAX_JWT.saturating_sub(from - start);
    let header_end = run_end(bytes, start, limit(start), is_url_safe);
    // Each part: a run, then (but after the last) a dot; the payload is
    // JSON too, so it starts with `eyJ`.
    let mut at = header_end;
    let mut parts = [(start, header_end); 3];
    for (part, span) in parts.iter_mut().enumerate().skip(1) {
        match bytes.get(at) {
            None => return text.at_end(|| Verdict::No),
            Some(b'.') => at += 1,
            Some(_) => return Verdict::No,
        }
        if part == 1 {
            let wanted = b"eyJ";
            let available = &bytes[at..bytes.len().min(at + 3)];
            if !wanted.starts_with(available) {
                return Verdict::No;
            }
            if available.len() < 3 {
                return text.at_end(|| Verdict::No);
            }
        }
        let end = run_end(bytes, at, limit(at), is_url_safe);
        *span = (at, end);
        at = end;
    }
    if at == bytes.len() && at - start < MAX_JWT {
        return text.at_end(|| jwt_verdict(start, parts));
    }
    jwt_verdict(start, parts)
}

fn jwt_verdict(start: usize, parts: [(usize, usize); 3]) -> Verdict {
    let length = |(from, to): (usize, usize)| to - from;
    if length(parts[0]) >= 10 && length(parts[1]) >= 10 && length(parts[2]) >= 16 {
        Verdict::Mask {
            start,
            end: parts[2].1,
            label: "JWT",
        }
    } else {
        Verdict::No
    }
}

fn slack_webhook(text: &Text<'_>, anchor_end: usize) -> Verdict {
    let bytes = text.bytes;
    let end = run_end(bytes, anchor_end, 257, |byte| {
        byte.is_ascii_alphanumeric() || byte == b'/'
    });
    let decide = |end: usize| {
        if (20..=256).contains(&(end - anchor_end)) {
            Verdict::Mask {
                start: anchor_end,
                end,
                label: "Slack webhook",
            }
        } else {
            Verdict::No
        }
    };
    if end == bytes.len() && end - anchor_end <= 256 {
        return text.at_end(|| decide(end));
    }
    decide(end)
}

fn sendgrid(text: &Text<'_>, start: usize, anchor_end: usize) -> Verdict {
    let bytes = text.bytes;
    if is_alphanumeric(text.byte_before(start)) {
        return Verdict::No;
    }
    let first_end = run_end(bytes, anchor_end, 23, is_url_safe);
    if first_end == bytes.len() && first_end - anchor_end <= 22 {
        return text.at_end(|| Verdict::No);
    }
    if first_end - anchor_end != 22 || bytes.get(first_end) != Some(&b'.') {
        return Verdict::No;
    }
    let second = first_end + 1;
    let second_end = run_end(bytes, second, 44, is_url_safe);
    let decide = |end: usize| {
        if end - second == 43 && !bytes.get(end).copied().is_some_and(is_alphanumeric) {
            Verdict::Mask {
                start,
                end,
                label: "SendGrid key",
            }
        } else {
            Verdict::No
        }
    };
    if second_end == bytes.len() && second_end - second <= 43 {
        return text.at_end(|| decide(second_end));
    }
    decide(second_end)
}
