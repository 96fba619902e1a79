//! The masking filter between a background job and its output file: a
//! process of its own (the job and its copier outlive the process that
//! started them, so the filter must too), started by
//! [`crate::LocalConfig::redact_filter`]. This is its main.
//!
//! Its input is one line with the secrets ([`Redactor::to_wire`], written
//! into the pipe by the starter before the job starts, so the values are in
//! no argument and no environment), then the job's output. It masks the
//! raw bytes as they come (a secret cut by the pipe's reads is still
//! masked) and writes them on at once. If its output fails (the copier
//! gave up), it reads the rest and discards it, so the job does not die of
//! a broken pipe.

use std::io::{BufRead as _, BufReader, Read, Write};
use std::sync::Arc;

use bashtool_core::{RedactStream, Redactor};

/// Bytes read at a time.
const READ_SIZE: usize = 64 * 1024;
/// The longest secrets line taken; longer, the rest of it is skipped and
/// only the shapes are masked.
pub(crate) const MAX_WIRE: u64 = 16 * 1024 * 1024;

/// Masks `input` (the secrets line, then the output) into `output`.
/// Returns when the input ends; an error only when reading fails.
pub fn run_redact_filter(input: impl Read, mut output: impl Write) -> std::io::Result<()> {
    let mut reader = BufReader::with_capacity(READ_SIZE, input);
    let mut line = Vec::new();
    (&mut reader).take(MAX_WIRE).read_until(b'\n', &mut line)?;
    // A line that does not parse is a bug of the starter: the shapes are
    // still masked.
    let redactor = std::str::from_utf8(&line)
        .ok()
        .and_then(Redactor::from_wire)
        .unwrap_or_else(|| Redactor::new(Vec::<(String, String)>::new()));
    let mut stream = RedactStream::new(Arc::new(redactor));
    let mut failed: Option<std::io::Error> = None;
    let mut write = |bytes: &[u8]| {
        if failed.is_none()
            && let Err(error) = output.write_all(bytes)
        {
            failed = Some(error);
        }
    };
    loop {
        let bytes = reader.fill_buf()?;
        if bytes.is_empty() {
            break;
        }
        let length = bytes.len();
        stream.push(bytes, &mut write);
        reader.consume(length);
    }
    stream.finish(&mut write);
    let _ = output.flush();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_the_output_with_the_secrets_of_the_first_line() {
        let redactor = Redactor::new([("API_TOKEN", "tok-0123456789abcdef")]);
        let mut input = redactor.to_wire().into_bytes();
        input.extend_from_slice(b"value tok-0123456789abcdef\n\x1b[31mred\x1b[0m\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\nend");
        let mut output = Vec::new();
        run_redact_filter(input.as_slice(), &mut output).expect("filters");
        assert_eq!(
            String::from_utf8_lossy(&output),
            "value [redacted: API_TOKEN]\n\x1b[31mred\x1b[0m\n[redacted: private key]\nend"
        );
    }

    #[test]
    fn a_broken_output_still_reads_the_input_to_its_end() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let input = vec![b'x'; 1024 * 1024];
        let mut reader = input.as_slice();
        run_redact_filter(&mut reader, Broken).expect("reads on");
        assert!(reader.is_empty());
    }
}
