//! Format-preserving edits of a JSON document, done on its text.
//!
//! Why not `serde_json` with `preserve_order`: re-serialising the whole file keeps key order but
//! relays out every line (indent width, `": "` vs `":"`, compact arrays, CRLF). Instead we parse the
//! text into a tree of byte spans and splice: an insertion adds exactly the new member or element,
//! rendered in the style the file already uses (its indent unit, the indent of its siblings, its
//! key/value separator, its line ending); a removal takes out exactly that member or element and the
//! comma and whitespace that separated it from its neighbour. Every other byte stays where it was.
//! After each edit the result is re-parsed by the caller, and must equal the intended value.
//!
//! The input must already be valid JSON (checked with `serde_json` first, for its line/column
//! messages); this parser adds what `serde_json` cannot give: spans, and duplicate-key detection
//! (`serde_json::Value` silently keeps the last of two equal keys, Claude may not).

use std::collections::HashSet;

/// A parsed value with its byte span `start..end` in the text.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
}

#[derive(Debug, Clone)]
pub(crate) enum Kind {
    Object(Vec<Member>),
    Array(Vec<Node>),
    String(String),
    Other,
}

#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub key: String,
    pub key_start: usize,
    pub key_end: usize,
    pub value: Node,
}

impl Node {
    pub fn members(&self) -> Option<&[Member]> {
        match &self.kind {
            Kind::Object(m) => Some(m),
            _ => None,
        }
    }

    pub fn elements(&self) -> Option<&[Node]> {
        match &self.kind {
            Kind::Array(e) => Some(e),
            _ => None,
        }
    }

    pub fn get(&self, key: &str) -> Option<&Node> {
        self.members()?
            .iter()
            .find(|m| m.key == key)
            .map(|m| &m.value)
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn type_name(&self) -> &'static str {
        match self.kind {
            Kind::Object(_) => "an object",
            Kind::Array(_) => "an array",
            Kind::String(_) => "a string",
            Kind::Other => "a number, boolean or null",
        }
    }
}

/// A parse problem at a byte offset.
#[derive(Debug)]
pub(crate) struct SpanError {
    pub offset: usize,
    pub message: String,
}

/// Parses `text` (a whole document) into spans. Rejects duplicate keys.
pub(crate) fn parse(text: &str) -> Result<Node, SpanError> {
    let mut p = Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    p.ws();
    let node = p.value(0)?;
    p.ws();
    if p.pos != p.bytes.len() {
        return Err(p.err("trailing characters after the JSON value"));
    }
    Ok(node)
}

/// Nesting bound: deeper documents are refused rather than risking the stack.
const MAX_DEPTH: usize = 128;

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn err(&self, message: &str) -> SpanError {
        SpanError {
            offset: self.pos,
            message: message.to_owned(),
        }
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, SpanError> {
        if depth > MAX_DEPTH {
            return Err(self.err("nesting too deep"));
        }
        let start = self.pos;
        match self.bytes.get(self.pos) {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => {
                let s = self.string()?;
                Ok(Node {
                    start,
                    end: self.pos,
                    kind: Kind::String(s),
                })
            }
            Some(_) => {
                while let Some(b) = self.bytes.get(self.pos) {
                    if matches!(b, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.pos += 1;
                }
                if self.pos == start {
                    return Err(self.err("expected a value"));
                }
                Ok(Node {
                    start,
                    end: self.pos,
                    kind: Kind::Other,
                })
            }
            None => Err(self.err("unexpected end of input")),
        }
    }

    fn string(&mut self) -> Result<String, SpanError> {
        let start = self.pos;
        self.pos += 1;
        loop {
            match self.bytes.get(self.pos) {
                Some(b'"') => {
                    self.pos += 1;
                    break;
                }
                Some(b'\\') => self.pos += 2,
                Some(_) => self.pos += 1,
                None => return Err(self.err("unterminated string")),
            }
        }
        let raw = self.text.get(start..self.pos).ok_or_else(|| SpanError {
            offset: start,
            message: "invalid string".to_owned(),
        })?;
        serde_json::from_str::<String>(raw).map_err(|e| SpanError {
            offset: start,
            message: format!("invalid string: {e}"),
        })
    }

    /// The items of the object or array whose opening bracket is at `self.pos`, each read by
    /// `item`, separated by commas up to `close`; leaves `self.pos` past `close`.
    fn items(
        &mut self,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Result<(), SpanError>,
    ) -> Result<(), SpanError> {
        self.pos += 1;
        self.ws();
        if self.bytes.get(self.pos) == Some(&close) {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.ws();
            item(self)?;
            self.ws();
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(c) if *c == close => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(self.err(&format!("expected `,` or `{}`", char::from(close)))),
            }
        }
    }

    fn object(&mut self, depth: usize) -> Result<Node, SpanError> {
        let start = self.pos;
        let mut members = Vec::new();
        let mut seen = HashSet::new();
        self.items(b'}', |p| {
            if p.bytes.get(p.pos) != Some(&b'"') {
                return Err(p.err("expected a key"));
            }
            let key_start = p.pos;
            let key = p.string()?;
            let key_end = p.pos;
            if !seen.insert(key.clone()) {
                return Err(SpanError {
                    offset: key_start,
                    message: format!("duplicate key {}", serde_json::Value::String(key)),
                });
            }
            p.ws();
            if p.bytes.get(p.pos) != Some(&b':') {
                return Err(p.err("expected `:`"));
            }
            p.pos += 1;
            p.ws();
            let value = p.value(depth + 1)?;
            members.push(Member {
                key,
                key_start,
                key_end,
                value,
            });
            Ok(())
        })?;
        Ok(Node {
            start,
            end: self.pos,
            kind: Kind::Object(members),
        })
    }

    fn array(&mut self, depth: usize) -> Result<Node, SpanError> {
        let start = self.pos;
        let mut elements = Vec::new();
        self.items(b']', |p| {
            elements.push(p.value(depth + 1)?);
            Ok(())
        })?;
        Ok(Node {
            start,
            end: self.pos,
            kind: Kind::Array(elements),
        })
    }
}

/// A value to insert, with its key order as written (serde_json's map would sort it).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum J {
    Obj(Vec<(&'static str, J)>),
    Arr(Vec<J>),
    Str(String),
    Num(u64),
}

impl J {
    pub fn to_value(&self) -> serde_json::Value {
        match self {
            J::Obj(m) => serde_json::Value::Object(
                m.iter()
                    .map(|(k, v)| ((*k).to_owned(), v.to_value()))
                    .collect(),
            ),
            J::Arr(a) => serde_json::Value::Array(a.iter().map(J::to_value).collect()),
            J::Str(s) => serde_json::Value::String(s.clone()),
            J::Num(n) => serde_json::Value::from(*n),
        }
    }
}

/// How the file lays itself out, detected once and reused for everything inserted.
#[derive(Debug, Clone)]
pub(crate) struct Style {
    /// One level of indentation (`"  "`, `"    "`, `"\t"`).
    pub unit: String,
    pub newline: &'static str,
    /// Between a key and its value, e.g. `": "`.
    pub colon: String,
    /// After a comma in a single-line container, e.g. `", "` or `","`.
    pub comma: String,
}

impl Default for Style {
    /// What Claude Code itself writes: two spaces, LF, `": "`.
    fn default() -> Self {
        Style {
            unit: "  ".to_owned(),
            newline: "\n",
            colon: ": ".to_owned(),
            comma: ", ".to_owned(),
        }
    }
}

impl Style {
    pub fn detect(text: &str, root: &Node) -> Style {
        let mut style = Style::default();
        if text.contains("\r\n") {
            style.newline = "\r\n";
        }
        // Every line start in JSON is outside a string (strings cannot hold raw newlines), so the
        // first indented line shows one indent unit (the root's members sit one level deep).
        if let Some(unit) = text
            .split('\n')
            .skip(1)
            .map(|line| {
                let trimmed = line.trim_start_matches([' ', '\t']);
                &line[..line.len() - trimmed.len()]
            })
            .find(|indent| !indent.is_empty())
        {
            style.unit = unit.to_owned();
        }
        if let Some(m) = first_member(root) {
            style.colon = text[m.key_end..m.value.start].to_owned();
        }
        if let Some(c) = first_inline_comma(text, root) {
            style.comma = c;
        }
        style
    }

    fn render(&self, v: &J, indent: &str, out: &mut String, pretty: bool) {
        match v {
            J::Str(s) => out.push_str(&serde_json::Value::String(s.clone()).to_string()),
            J::Num(n) => out.push_str(&n.to_string()),
            J::Obj(members) => {
                let items = members.iter().map(|(k, val)| (Some(*k), val));
                self.render_items(('{', '}'), items, indent, out, pretty);
            }
            J::Arr(elements) => {
                let items = elements.iter().map(|val| (None, val));
                self.render_items(('[', ']'), items, indent, out, pretty);
            }
        }
    }

    /// An object's members (each with its key) or an array's elements, between the brackets.
    fn render_items<'a>(
        &self,
        (open, close): (char, char),
        items: impl Iterator<Item = (Option<&'a str>, &'a J)>,
        indent: &str,
        out: &mut String,
        pretty: bool,
    ) {
        let mut items = items.peekable();
        out.push(open);
        if items.peek().is_none() {
            out.push(close);
            return;
        }
        let inner = format!("{indent}{}", self.unit);
        for (i, (key, val)) in items.enumerate() {
            if i > 0 {
                out.push_str(if pretty { "," } else { &self.comma });
            }
            if pretty {
                out.push_str(self.newline);
                out.push_str(&inner);
            }
            if let Some(k) = key {
                out.push_str(&serde_json::Value::String(k.to_owned()).to_string());
                out.push_str(&self.colon);
            }
            self.render(val, &inner, out, pretty);
        }
        if pretty {
            out.push_str(self.newline);
            out.push_str(indent);
        }
        out.push(close);
    }

    /// A whole new document holding `v`, ending with a newline.
    pub fn render_document(&self, v: &J) -> String {
        let mut out = String::new();
        self.render(v, "", &mut out, true);
        out.push_str(self.newline);
        out
    }
}

fn first_member(node: &Node) -> Option<&Member> {
    match &node.kind {
        Kind::Object(m) => m.first(),
        Kind::Array(e) => e.iter().find_map(first_member),
        _ => None,
    }
}

/// The separator after the first comma of a container written on one line, if any.
fn first_inline_comma(text: &str, node: &Node) -> Option<String> {
    let is_inline = !text[node.start..node.end].contains('\n');
    match &node.kind {
        Kind::Object(m) if m.len() >= 2 && is_inline => {
            Some(text[m[0].value.end..m[1].key_start].to_owned())
        }
        Kind::Array(e) if e.len() >= 2 && is_inline => Some(text[e[0].end..e[1].start].to_owned()),
        Kind::Object(m) => m.iter().find_map(|m| first_inline_comma(text, &m.value)),
        Kind::Array(e) => e.iter().find_map(|e| first_inline_comma(text, e)),
        _ => None,
    }
}

/// The whitespace at the start of the line holding byte `offset`.
fn line_indent(text: &str, offset: usize) -> &str {
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..];
    let trimmed = line.trim_start_matches([' ', '\t']);
    &line[..line.len() - trimmed.len()]
}

/// Whether a container is laid out over several lines. An empty one follows the document.
fn is_multiline(text: &str, container: &Node) -> bool {
    let inner = &text[container.start..container.end];
    match &container.kind {
        Kind::Object(m) if m.is_empty() => text.trim_end().contains('\n'),
        Kind::Array(e) if e.is_empty() => text.trim_end().contains('\n'),
        _ => inner.contains('\n'),
    }
}

/// Where to insert after the container's last item, or `None` when the container is empty.
fn last_item_end(container: &Node) -> Option<(usize, usize)> {
    match &container.kind {
        Kind::Object(m) => m.last().map(|m| (m.key_start, m.value.end)),
        Kind::Array(e) => e.last().map(|e| (e.start, e.end)),
        _ => None,
    }
}

fn splice(text: &str, at: std::ops::Range<usize>, with: &str) -> String {
    let mut out = String::with_capacity(text.len() + with.len());
    out.push_str(&text[..at.start]);
    out.push_str(with);
    out.push_str(&text[at.end..]);
    out
}

/// Appends an item (`key: value` for an object, `value` for an array) at the end of `container`.
pub(crate) fn append(
    text: &str,
    style: &Style,
    container: &Node,
    key: Option<&str>,
    value: &J,
) -> String {
    let multiline = is_multiline(text, container);
    let render_item = |indent: &str| {
        let mut s = String::new();
        if let Some(k) = key {
            s.push_str(&serde_json::Value::String(k.to_owned()).to_string());
            s.push_str(&style.colon);
        }
        style.render(value, indent, &mut s, multiline);
        s
    };
    match last_item_end(container) {
        Some((last_start, last_end)) => {
            let ins = if multiline {
                let indent = line_indent(text, last_start);
                format!(",{}{indent}{}", style.newline, render_item(indent))
            } else {
                format!("{}{}", style.comma, render_item(""))
            };
            splice(text, last_end..last_end, &ins)
        }
        None => {
            let open = container.start + 1;
            let close = container.end - 1;
            let ins = if multiline {
                let outer = line_indent(text, container.start);
                let inner = format!("{outer}{}", style.unit);
                format!(
                    "{nl}{inner}{item}{nl}{outer}",
                    nl = style.newline,
                    item = render_item(&inner)
                )
            } else {
                render_item("")
            };
            splice(text, open..close, &ins)
        }
    }
}

/// Removes item `index` of `container` (an object member or array element) with the separator
/// that joined it to a neighbour.
pub(crate) fn remove(text: &str, container: &Node, index: usize) -> String {
    let spans: Vec<(usize, usize)> = match &container.kind {
        Kind::Object(m) => m.iter().map(|m| (m.key_start, m.value.end)).collect(),
        Kind::Array(e) => e.iter().map(|e| (e.start, e.end)).collect(),
        _ => return text.to_owned(),
    };
    if spans.len() == 1 {
        // The container is left empty, written `{}`/`[]`.
        return splice(text, container.start + 1..container.end - 1, "");
    }
    if index + 1 < spans.len() {
        splice(text, spans[index].0..spans[index + 1].0, "")
    } else {
        splice(text, spans[index - 1].1..spans[index].1, "")
    }
}

/// 1-based line and column (in characters) of byte `offset`.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group() -> J {
        J::Obj(vec![("matcher", J::Str("m".into())), ("n", J::Num(1))])
    }

    #[test]
    fn append_into_a_pretty_array_copies_sibling_indent_and_crlf() {
        let text = "{\r\n    \"a\": [\r\n        1\r\n    ]\r\n}\r\n";
        let root = parse(text).unwrap();
        let style = Style::detect(text, &root);
        let arr = root.get("a").unwrap();
        let out = append(text, &style, arr, None, &group());
        assert_eq!(
            out,
            "{\r\n    \"a\": [\r\n        1,\r\n        {\r\n            \"matcher\": \"m\",\r\n            \"n\": 1\r\n        }\r\n    ]\r\n}\r\n"
        );
        let again = parse(&out).unwrap();
        assert_eq!(remove(&out, again.get("a").unwrap(), 1), text);
    }

    #[test]
    fn append_into_compact_object_stays_compact() {
        let text = r#"{"x":1,"y":2}"#;
        let root = parse(text).unwrap();
        let style = Style::detect(text, &root);
        let out = append(text, &style, &root, Some("k"), &group());
        assert_eq!(out, r#"{"x":1,"y":2,"k":{"matcher":"m","n":1}}"#);
    }

    #[test]
    fn append_into_empty_array_of_a_pretty_file_expands_it() {
        let text = "{\n\t\"a\": []\n}";
        let root = parse(text).unwrap();
        let style = Style::detect(text, &root);
        let out = append(text, &style, root.get("a").unwrap(), None, &J::Num(7));
        assert_eq!(out, "{\n\t\"a\": [\n\t\t7\n\t]\n}");
    }

    #[test]
    fn duplicate_keys_are_found_even_when_escaped_differently() {
        let text = "{\"hooks\": {}, \"a\": {\"k\": 1, \"\\u006b\": 2}}";
        let err = parse(text).unwrap_err();
        assert!(
            err.message.contains("duplicate key \"k\""),
            "{}",
            err.message
        );
        assert_eq!(line_col(text, err.offset), (1, 29));
    }

    #[test]
    fn remove_middle_and_last_members() {
        let text = "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3\n}";
        let root = parse(text).unwrap();
        assert_eq!(remove(text, &root, 1), "{\n  \"a\": 1,\n  \"c\": 3\n}");
        assert_eq!(remove(text, &root, 2), "{\n  \"a\": 1,\n  \"b\": 2\n}");
    }
}
