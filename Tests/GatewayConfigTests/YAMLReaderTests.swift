import XCTest
@testable import GatewayConfig

/// Layer 1: what the YAML reader refuses, and where it says the problem is.
final class YAMLReaderTests: XCTestCase {
    /// The reader's own issues (layer 1 alone; `errorLines` adds what validation finds in the same text).
    private func readerErrorLines(_ yaml: String, file: StaticString = #filePath, line: UInt = #line) -> [String] {
        let issues = YAMLReader.readRecovering(Array(yaml.utf8)).issues
        if issues.isEmpty { XCTFail("expected reader errors, but the YAML was read", file: file, line: line) }
        return ConfigError(issues: issues).issues.map(\.description)
    }

    func testReadsScalarsListsMappingsWithPositions() throws {
        let read = YAMLReader.readRecovering(Array("a: 1\nb:\n  - x\n  - 'y'\nc: {d: e}\n".utf8))
        XCTAssertEqual(read.issues, [])
        let node = try XCTUnwrap(read.root)
        guard case .mapping(let entries) = node.kind else { return XCTFail("not a mapping") }
        XCTAssertEqual(entries.map(\.key), ["a", "b", "c"])
        XCTAssertEqual(entries[1].keyMark, SourceMark(line: 2, column: 1))
        guard case .sequence(let items) = entries[1].value.kind else { return XCTFail("not a list") }
        XCTAssertEqual(items.map(\.mark), [SourceMark(line: 3, column: 5), SourceMark(line: 4, column: 5)])
        guard case .scalar(let x) = items[0].kind, case .scalar(let y) = items[1].kind else { return XCTFail() }
        XCTAssertTrue(x.isPlain)
        XCTAssertFalse(y.isPlain)
        XCTAssertEqual(y.text, "y")
    }

    func testDuplicateKeysAreErrorsAtTheSecondKey() {
        let lines = readerErrorLines("""
        listen: 127.0.0.1:8080
        upstreams:
          app: http://127.0.0.1:8081
          app: http://127.0.0.1:8082
        listen: 127.0.0.1:9090
        """)
        XCTAssertEqual(lines, [
            "upstreams.app: duplicate key \"app\" (first at line 3, column 3) (line 4, column 3)",
            "listen: duplicate key \"listen\" (first at line 1, column 1) (line 5, column 1)",
        ])
    }

    func testAnchorsAndAliasesAreRefused() {
        let lines = readerErrorLines("""
        listen: &addr 127.0.0.1:8080
        admin: *addr
        """)
        XCTAssertEqual(lines, [
            "listen: anchors (&addr) and aliases are not supported: aliases can expand exponentially (\"billion laughs\"); write the value out (line 1, column 9)",
            "admin: aliases (*addr) are not supported: they can expand exponentially (\"billion laughs\"); write the value out (line 2, column 8)",
        ])
    }

    func testBillionLaughsIsRefusedBeforeExpansion() {
        var yaml = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
        for i in 1..<10 { yaml += "a\(i): &a\(i) [" + Array(repeating: "*a\(i - 1)", count: 9).joined(separator: ", ") + "]\n" }
        let lines = readerErrorLines(yaml)
        XCTAssertEqual(lines.count, 10 + 81)  // every anchor and every alias, each reported once, nothing expanded
        XCTAssertTrue(lines.allSatisfy { $0.contains("billion laughs") })
    }

    func testMergeKeysAreRefused() {
        let lines = readerErrorLines("""
        upstreams:
          app: http://127.0.0.1:8081
        routes:
          - <<: {upstream: app}
            path_prefix: /
        """)
        XCTAssertEqual(lines.first, "routes[0]: merge keys (<<) are not supported: write the keys out (line 4, column 5)")
    }

    func testMultipleDocumentsAreRefused() {
        let lines = errorLines("listen: 127.0.0.1:8080\n---\nlisten: 127.0.0.1:9090\n")
        XCTAssertEqual(lines, ["a second YAML document (---) was found: one configuration per file (line 2, column 1)"])
    }

    func testOnlyCoreTagsAreAccepted() {
        XCTAssertEqual(readerErrorLines("listen: !!binary aGVsbG8=\n"),
                       ["listen: the tag !!binary is not supported: only !!str, !!int, !!float, !!bool, !!null, !!map and !!seq (line 1, column 9)"])
        XCTAssertEqual(readerErrorLines("listen: !custom 127.0.0.1:8080\n"),
                       ["listen: the tag !custom is not supported: only !!str, !!int, !!float, !!bool, !!null, !!map and !!seq (line 1, column 9)"])
        XCTAssertEqual(readerErrorLines("limits: {max_headers: !!int many}\n").first,
                       "limits.max_headers: \"many\" is not an integer, but it is tagged !!int (line 1, column 23)")
        // !!str makes a plain-looking value a string: an integer field then refuses it.
        let quoted = errorLines(ConfigTestHelpers.minimal(extra: "limits: {max_headers: !!str 50}"))
        XCTAssertEqual(quoted, ["limits.max_headers: expected an integer, got the quoted string \"50\": remove the quotes (line 10, column 23)"])
    }

    func testNonUTF8IsRefusedWithPosition() {
        var bytes = Array("listen: 127.0.0.1:8080\nadmin: caf".utf8)
        bytes += [0xE9, 0x0A]  // Latin-1 é
        XCTAssertThrowsError(try GatewayConfiguration.parse(bytes: bytes, baseDirectory: "/tmp")) { error in
            XCTAssertEqual((error as? ConfigError)?.description,
                           "the configuration is not valid UTF-8 (byte 0xE9 at offset 33); save it as UTF-8 (line 2, column 11)")
        }
        XCTAssertNil(YAMLReader.firstInvalidUTF8(Array("héllo ✓ 𝄞".utf8)))
        XCTAssertEqual(YAMLReader.firstInvalidUTF8([0x61, 0xC0, 0xAF]), 1)        // overlong
        XCTAssertEqual(YAMLReader.firstInvalidUTF8([0xED, 0xA0, 0x80]), 0)        // surrogate
        XCTAssertEqual(YAMLReader.firstInvalidUTF8([0xF4, 0x90, 0x80, 0x80]), 0)  // > U+10FFFF
        XCTAssertEqual(YAMLReader.firstInvalidUTF8([0x61, 0xE2, 0x9C]), 1)        // truncated
    }

    func testSizeIsBounded() {
        let big = "# " + String(repeating: "x", count: YAMLReader.maximumBytes) + "\n"
        XCTAssertEqual(errorLines(big), ["the configuration is \(big.utf8.count) bytes; the limit is 1048576 bytes (1MiB)"])
    }

    func testDepthIsBounded() {
        let deep = String(repeating: "[", count: 40) + String(repeating: "]", count: 40)
        let lines = errorLines("listen: " + deep)
        XCTAssertEqual(lines.count, 1)
        XCTAssertTrue(lines[0].contains("nesting deeper than 32 levels"), "\(lines)")
    }

    func testSyntaxErrorsCarryLibyamlsPosition() {
        let lines = errorLines("listen: 127.0.0.1:8080\nroutes:\n  - path_prefix: /\n   upstream: app\n")
        XCTAssertEqual(lines.count, 1)
        XCTAssertTrue(lines[0].hasPrefix("invalid YAML: "), lines[0])
        XCTAssertTrue(lines[0].hasSuffix("(line 4, column 4)"), lines[0])
        XCTAssertEqual(errorLines("listen:\t127.0.0.1:8080\n\tadmin: x\n").count, 1)
    }

    func testEmptyAndNonMappingDocuments() {
        XCTAssertEqual(errorLines(""), ["the configuration is empty"])
        XCTAssertEqual(errorLines("# only a comment\n"), ["the configuration is empty"])
        XCTAssertEqual(errorLines("- listen\n"), ["expected a mapping with keys such as listen, upstreams and routes, got a list (line 1, column 1)"])
    }

    func testComplexKeysAreRefused() {
        let lines = readerErrorLines("? [a, b]\n: c\n")
        XCTAssertEqual(lines, ["mapping keys must be plain strings, not a list (line 1, column 3)"])
    }
}

extension YAMLReaderTests {
    func testUTF8ByteOrderMarkIsTolerated() throws {
        let bytes: [UInt8] = [0xEF, 0xBB, 0xBF] + Array(ConfigTestHelpers.minimal().utf8)
        XCTAssertNoThrow(try GatewayConfiguration.parse(bytes: bytes, baseDirectory: "/tmp"))
    }

    func testYAML11BooleansAreStringsAndQuotedValuesWork() throws {
        // `mode: off` is the string off (YAML 1.2), and a quoted mode works the same.
        let loaded = loadOK(ConfigTestHelpers.minimal(routes: "routes:\n  - {path_prefix: /a, upstream: app, mode: off}\n  - {path_prefix: /, upstream: \"app\", mode: 'monitor'}"))
        XCTAssertEqual(loaded?.configuration.routes.map(\.mode), [.off, .monitor])
    }
}
