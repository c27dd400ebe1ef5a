//! A whole script run through the main() protocol: a program whose `main()` runs the script
//! as the interpreter would run a file, and returns nothing.
//!
//! For callers whose code calls its own entry point, such as Dify's code node (its template
//! defines `main` and calls `main(**inputs)` itself): given as it is, the runner would call
//! that `main` a second time. Wrapped, the script runs once, in a namespace of its own (so its
//! `main` is not the wrapper's), as `__main__`, and prints exactly what it prints. Every
//! provider runs the wrapper, since it is an ordinary main() program.

use crate::model::execution::Language;

/// The program that runs `code` as a script of `language` when its `main()` is called.
pub fn as_main_program(language: Language, code: &str) -> String {
    // A JSON string is a Python and a JavaScript string literal of the same text (serde_json
    // escapes only quotes, backslashes and control characters, all alike in the three).
    let literal = serde_json::to_string(code).expect("a string serializes");
    match language {
        Language::Python => format!(
            "def main():\n\
             \x20   import sys as _sys\n\
             \x20   _scope = {{\"__name__\": \"__main__\", \"__builtins__\": __builtins__}}\n\
             \x20   try:\n\
             \x20       exec(compile(_SCRIPT, \"script.py\", \"exec\"), _scope)\n\
             \x20   except SystemExit:\n\
             \x20       raise\n\
             \x20   except BaseException as _error:\n\
             \x20       import traceback\n\
             \x20       traceback.print_exception(type(_error), _error, _error.__traceback__.tb_next)\n\
             \x20       _sys.exit(1)\n\
             \x20   return None\n\
             \n\
             _SCRIPT = {literal}\n"
        ),
        Language::Javascript => format!(
            "function main() {{\n\
             \x20 const Module = require('module');\n\
             \x20 const filename = require('path').join(process.cwd(), 'script.js');\n\
             \x20 const script = new Module(filename, module);\n\
             \x20 script.filename = filename;\n\
             \x20 script.paths = Module._nodeModulePaths(process.cwd());\n\
             \x20 script._compile(SCRIPT, filename);\n\
             \x20 return null;\n\
             }}\n\
             const SCRIPT = {literal};\n"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_literal_is_the_script_byte_for_byte() {
        let code = "print(\"a\\\\b\")\n\t'\u{2028}' \u{1F600} \u{0}";
        for language in [Language::Python, Language::Javascript] {
            let program = as_main_program(language, code);
            let start = program.find("SCRIPT = ").unwrap() + "SCRIPT = ".len();
            let literal = program[start..].trim_end().trim_end_matches(';');
            let back: String = serde_json::from_str(literal).unwrap();
            assert_eq!(back, code, "{language}");
        }
    }
}
