/// A position in the configuration text: 1-based line and 1-based column (columns count characters,
/// as libyaml does, so they match what an editor shows).
public struct SourceMark: Sendable, Hashable, CustomStringConvertible {
    /// 1-based line number.
    public var line: Int
    /// 1-based column number (characters, not bytes).
    public var column: Int

    /// Creates a mark from 1-based `line` and `column`.
    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    /// `line L, column C`, the form used in every configuration message.
    public var description: String { "line \(line), column \(column)" }
}
