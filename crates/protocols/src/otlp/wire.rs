//! Just enough protobuf framing to walk the outer OTLP messages without
//! building them: fields are yielded one at a time as borrowed payloads.

use prost::encoding::{DecodeContext, WireType, decode_varint, skip_field};

/// One field of a message: its number and, for the wire types the walker
/// reads, its payload.
pub enum Field<'a> {
    /// A length-delimited payload (message, string, bytes, packed).
    Bytes(u32, &'a [u8]),
    /// A varint value.
    Varint(u32, u64),
    /// A field of another wire type (its number), already skipped.
    Other(u32),
}

/// Iterates over the fields of one message.
pub struct Fields<'a> {
    buf: &'a [u8],
}

impl<'a> Fields<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }

    /// The next field, `None` at the end, an error for malformed framing.
    pub fn next_field(&mut self) -> Option<Result<Field<'a>, String>> {
        if self.buf.is_empty() {
            return None;
        }
        Some(self.read())
    }

    fn read(&mut self) -> Result<Field<'a>, String> {
        let key = decode_varint(&mut self.buf).map_err(|e| e.to_string())?;
        let wire = WireType::try_from(key & 7).map_err(|_| format!("invalid wire type {}", key & 7))?;
        let tag = u32::try_from(key >> 3).map_err(|_| format!("invalid field key {key}"))?;
        if tag == 0 {
            return Err("invalid field number 0".into());
        }
        match wire {
            WireType::LengthDelimited => {
                let len = decode_varint(&mut self.buf).map_err(|e| e.to_string())?;
                let len = usize::try_from(len).map_err(|_| "length overflows".to_string())?;
                let (payload, rest) = self
                    .buf
                    .split_at_checked(len)
                    .ok_or_else(|| format!("field {tag} runs past the end of its message"))?;
                self.buf = rest;
                Ok(Field::Bytes(tag, payload))
            }
            WireType::Varint => {
                let v = decode_varint(&mut self.buf).map_err(|e| e.to_string())?;
                Ok(Field::Varint(tag, v))
            }
            other => {
                skip_field(other, tag, &mut self.buf, DecodeContext::default()).map_err(|e| e.to_string())?;
                Ok(Field::Other(tag))
            }
        }
    }
}

/// A protobuf `string` field's payload as text.
pub fn utf8(bytes: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(bytes).map_err(|_| "string field is not valid UTF-8".to_string())
}
