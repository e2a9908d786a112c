//! Parameter layouts from PTX text: each `.entry NAME(.param ..., .param ...)` declaration. A
//! parameter is a scalar (`.param .u64 p`) or a byte array with an alignment (`.param .align 8
//! .b8 p[48]`, a structure by value); it sits at the next offset that is a multiple of its
//! alignment, as the ABI lays parameters out (the driver's `cuKernelGetParamInfo` reports the same).

use super::param::Param;

/// (kernel name, layout) for every `.entry`; a kernel whose parameter list cannot be read has
/// `None` (its launches stay unchecked rather than checked wrongly).
pub fn layouts(text: &str) -> Vec<(String, Option<Vec<Param>>)> {
    let text = without_comments(text);
    let mut found = Vec::new();
    let mut rest = text.as_str();
    while let Some(at) = find_directive(rest, ".entry") {
        rest = &rest[at + ".entry".len()..];
        let trimmed = rest.trim_start();
        let name_len = trimmed.find(|c: char| !is_identifier_char(c)).unwrap_or(trimmed.len());
        if name_len == 0 {
            continue;
        }
        let name = trimmed[..name_len].to_string();
        let after_name = trimmed[name_len..].trim_start();
        rest = after_name;
        // No parameter list at all is as good as an empty one.
        let layout = match after_name.strip_prefix('(') {
            None => Some(Vec::new()),
            Some(list) => match list.find(')') {
                None => None,
                Some(close) => {
                    rest = &list[close + 1..];
                    parameters(&list[..close])
                }
            },
        };
        found.push((name, layout));
    }
    found
}

/// `text` with `//` and `/* */` comments replaced by a space (PTX has no string literals in which
/// they could hide).
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let line = rest.find("//");
        let block = rest.find("/*");
        let (start, end_marker) = match (line, block) {
            (Some(l), Some(b)) if b < l => (b, "*/"),
            (Some(l), _) => (l, "\n"),
            (None, Some(b)) => (b, "*/"),
            (None, None) => break,
        };
        out.push_str(&rest[..start]);
        out.push(' ');
        rest = match rest[start + 2..].find(end_marker) {
            Some(e) if end_marker == "\n" => &rest[start + 2 + e..],
            Some(e) => &rest[start + 2 + e + 2..],
            None => "",
        };
    }
    out.push_str(rest);
    out
}

/// Where `directive` next stands as a whole word (not part of `.entryx` or `x.entry`).
fn find_directive(text: &str, directive: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find(directive) {
        let at = from + i;
        let before_ok = at == 0 || text[..at].ends_with(|c: char| c.is_whitespace() || c == '}' || c == ';');
        let after_ok = text[at + directive.len()..].starts_with(|c: char| c.is_whitespace());
        if before_ok && after_ok {
            return Some(at);
        }
        from = at + directive.len();
    }
    None
}

fn is_identifier_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '%'
}

/// The layout of a parameter list (the text between the parentheses).
fn parameters(list: &str) -> Option<Vec<Param>> {
    let mut layout = Vec::new();
    let mut offset = 0usize;
    for declaration in list.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let (size, align) = parameter(declaration)?;
        offset = offset.checked_next_multiple_of(align)?;
        layout.push(Param { offset, size });
        offset = offset.checked_add(size)?;
    }
    Some(layout)
}

/// Size and alignment of one `.param` declaration, e.g. `.param .u64 .ptr .global .align 4 x` or
/// `.param .align 8 .b8 s[48]`.
fn parameter(declaration: &str) -> Option<(usize, usize)> {
    let mut tokens = declaration.split_whitespace();
    if tokens.next()? != ".param" {
        return None;
    }
    let (mut element, mut align, mut count, mut pointer) = (None, None, 1usize, false);
    let mut named = false;
    while let Some(token) = tokens.next() {
        match token {
            ".align" => {
                let value = tokens.next()?.parse::<usize>().ok().filter(|a| a.is_power_of_two())?;
                // After `.ptr` the alignment is the pointee's, not the parameter's.
                if !pointer {
                    align = Some(value);
                }
            }
            // `.ptr` and the state space and alignment after it describe what a pointer points to.
            ".ptr" => pointer = true,
            ".global" | ".const" | ".local" | ".shared" if pointer => {}
            t if t.starts_with('.') => {
                if element.is_some() {
                    return None;
                }
                element = Some(type_size(t)?);
            }
            name => {
                if named {
                    return None;
                }
                named = true;
                count = array_count(name)?;
            }
        }
    }
    let element = element?;
    if !named {
        return None;
    }
    let size = element.checked_mul(count)?;
    Some((size, align.unwrap_or(element)))
}

/// 1 for `name`, N for `name[N]` (a structure's bytes); `None` for anything else.
fn array_count(name: &str) -> Option<usize> {
    match name.split_once('[') {
        None => Some(1),
        Some((_, dims)) => {
            let count = dims.strip_suffix(']')?;
            count.parse::<usize>().ok().filter(|&c| c > 0)
        }
    }
}

/// Bytes of a PTX fundamental type that can be a kernel parameter.
fn type_size(t: &str) -> Option<usize> {
    Some(match t {
        ".b8" | ".u8" | ".s8" => 1,
        ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => 2,
        ".b32" | ".u32" | ".s32" | ".f32" | ".f16x2" | ".bf16x2" => 4,
        ".b64" | ".u64" | ".s64" | ".f64" => 8,
        ".b128" => 16,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(text: &str, kernel: &str) -> Option<Vec<(usize, usize)>> {
        layouts(text)
            .into_iter()
            .find(|(n, _)| n == kernel)
            .expect("kernel declared")
            .1
            .map(|l| l.iter().map(|p| (p.offset, p.size)).collect())
    }

    #[test]
    fn scalars_pointers_and_structures_take_their_aligned_offsets() {
        let ptx = "
            .version 7.8
            .target sm_70
            .address_size 64
            // .entry in_a_comment(.param .u32 x)
            .visible .entry k(
                .param .u8 k_param_0,
                .param .u16 k_param_1,
                .param .u64 .ptr .global .align 4 k_param_2,
                .param .align 8 .b8 k_param_3[48],
                .param .align 16 .b8 k_param_4[16],
                .param .f32 k_param_5
            )
            .maxntid 256, 1, 1
            {
                ld.param.u8 %rs1, [k_param_0];
                ret;
            }
            .visible .entry empty()
            {
                ret;
            }
            .entry no_list
            {
                ret;
            }";
        assert_eq!(layout(ptx, "k"), Some(vec![(0, 1), (2, 2), (8, 8), (16, 48), (64, 16), (80, 4)]));
        assert_eq!(layout(ptx, "empty"), Some(vec![]));
        assert_eq!(layout(ptx, "no_list"), Some(vec![]));
        assert!(layouts(ptx).iter().all(|(n, _)| n != "in_a_comment"), "comments are not code");
    }

    #[test]
    fn a_parameter_that_cannot_be_read_leaves_its_kernel_unknown() {
        let ptx = ".visible .entry k(.param .texref t, .param .u32 n) { ret; }\n.visible .entry ok(.param .u32 n) { ret; }";
        assert_eq!(layout(ptx, "k"), None);
        assert_eq!(layout(ptx, "ok"), Some(vec![(0, 4)]));
        assert_eq!(layout(".entry bad(.param .align 3 .b8 s[4]) {}", "bad"), None, "an alignment that is no power of two");
        assert_eq!(layout(".entry bad(.param .b8 s[]) {}", "bad"), None, "an array without a size");
        assert_eq!(layout(".entry bad(.param .u32 .u64 x) {}", "bad"), None, "two types");
        assert_eq!(layout(".entry bad(.param .u32 x\n", "bad"), None, "an unclosed list");
    }

    #[test]
    fn block_comments_and_directives_inside_words_are_skipped() {
        let ptx = "/* .entry hidden(.param .u32 x) */ .visible .entry real(/* a comment */ .param .u64 p) {}\n\
                   mov.u32 %r1, my.entryish; .entry second(.param .u32 a, .param .u32 b) {}";
        let names: Vec<String> = layouts(ptx).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, vec!["real", "second"]);
        assert_eq!(layout(ptx, "second"), Some(vec![(0, 4), (4, 4)]));
    }
}
