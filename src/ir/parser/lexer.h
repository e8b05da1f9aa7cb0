// The tokens of the .tile format (private to the parser).
//
// The lexer turns the whole source into tokens up front, Python-style: NEWLINE ends a logical line, INDENT
// and DEDENT bracket every change of indentation, and newlines inside (), [] are joined. It never fails:
// a lexical problem (a stray character, bad indentation, an unclosed bracket) becomes an Error token carrying
// its message at its location, which the parser reports where a statement would fail anyway and recovers
// from at the next line like any other error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tilevm/support/diagnostics.h"
#include "tilevm/type/data_type.h"

namespace tilevm::ir::parser {

enum class TokenKind {
  Name,     // identifiers and keywords (the parser tells them apart)
  Int,      // value in `int_value`
  Float,    // value in `float_value`
  Punct,    // operators and delimiters: + - * / % << >> & | ^ < <= > >= == != = , : . ( ) [ ]
  Newline,  // end of a logical line
  Indent,
  Dedent,
  Error,  // a lexical error; `text` is the message
  End,
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;  // the spelling (the message for Error tokens)
  SourceLoc loc;
  int64_t int_value = 0;
  double float_value = 0;
  DataType int_type = DataType::i32();  // i32 when the literal fits, else i64
};

// Tokenizes `source`. The result always ends with Newline (when there is a last line), the Dedents that
// close open blocks, and End.
std::vector<Token> tokenize(std::string_view source);

// "'foo'", "end of line", "end of file", "an indented block"... for "expected X, found Y" messages.
std::string describe(const Token& token);

}  // namespace tilevm::ir::parser
