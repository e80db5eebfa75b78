/// Errors of the device subcommands: `usage` exits with status 2 and prints the usage text,
/// `failed` exits with status 1.
enum DeviceCommandError: Error, CustomStringConvertible {
    /// Bad command line.
    case usage(String)
    /// The command could not do its work (I/O, bad input file, network).
    case failed(String)

    var description: String {
        switch self {
        case .usage(let text): return text
        case .failed(let text): return text
        }
    }
}
