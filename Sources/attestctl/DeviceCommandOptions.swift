/// Command-line options of the device subcommands (`ca`, `keygen`, `attest`, `assert`,
/// `assert-raw`, `simulate`): `--name value` or `--name=value`, flags, repeatable options, aliases.
struct DeviceCommandOptions {
    private var values: [String: [String]] = [:]
    private var flags: Set<String> = []

    /// Parses `arguments`.
    /// - Parameters:
    ///   - valued: option names that take a value (without the leading `--`).
    ///   - flags: option names without a value.
    ///   - aliases: alternative name -> canonical name (e.g. ref_device.py's `extra-field` -> `bind`).
    /// - Throws: `DeviceCommandError.usage` for unknown options, missing values or positional arguments.
    init(_ arguments: [String], valued: Set<String>, flags known: Set<String> = [], aliases: [String: String] = [:]) throws {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            guard argument.hasPrefix("--"), argument.count > 2 else {
                throw DeviceCommandError.usage("unexpected argument \(argument)")
            }
            var name = String(argument.dropFirst(2))
            var inline: String? = nil
            if let equals = name.firstIndex(of: "=") {
                inline = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            name = aliases[name] ?? name
            if known.contains(name) {
                guard inline == nil else { throw DeviceCommandError.usage("--\(name) takes no value") }
                flags.insert(name)
            } else if valued.contains(name) {
                if let inline {
                    values[name, default: []].append(inline)
                } else {
                    guard index + 1 < arguments.count else { throw DeviceCommandError.usage("--\(name) needs a value") }
                    values[name, default: []].append(arguments[index + 1])
                    index += 1
                }
            } else {
                throw DeviceCommandError.usage("unknown option --\(name)")
            }
            index += 1
        }
    }

    /// The value of a single-use option, or nil when absent.
    /// - Throws: `DeviceCommandError.usage` when it was given more than once.
    func value(_ name: String) throws -> String? {
        guard let list = values[name] else { return nil }
        guard list.count == 1 else { throw DeviceCommandError.usage("--\(name) given \(list.count) times") }
        return list[0]
    }

    /// The value of a required single-use option.
    func required(_ name: String) throws -> String {
        guard let value = try value(name) else { throw DeviceCommandError.usage("--\(name) is required") }
        return value
    }

    /// Every value of a repeatable option, in order.
    func all(_ name: String) -> [String] { values[name] ?? [] }

    /// Whether a flag was given.
    func flag(_ name: String) -> Bool { flags.contains(name) }

    /// An integer option in `range`, or `defaultValue` when absent.
    func integer<T: FixedWidthInteger>(_ name: String, default defaultValue: T? = nil, in range: ClosedRange<T>) throws -> T? {
        guard let text = try value(name) else { return defaultValue }
        guard let number = T(text, radix: 10), range.contains(number) else {
            throw DeviceCommandError.usage("--\(name) must be an integer in \(range.lowerBound)...\(range.upperBound), got \(text)")
        }
        return number
    }
}
