import Foundation
import GatewayTestSupport
import XCTest

/// The committed fuzz seeds (`Fuzz/corpus/NAME`, including the inputs of past findings) replayed
/// through the plain build of `attest-fuzz`: every harness's invariants must hold on every seed, so a
/// parser change that breaks one fails here, not only in a fuzzing session (Fuzz/README.md).
final class FuzzCorpusReplayTests: XCTestCase {
    func testEveryCommittedSeedKeepsItsHarnessInvariants() throws {
        let fuzz = try BuiltProducts.executable("attest-fuzz")
        let listed = try ChildProcess.run(fuzz, ["list"])
        XCTAssertEqual(listed.status, 0, listed.output)
        let harnesses = listed.output.split(separator: "\n").compactMap { $0.split(separator: "\t").first.map(String.init) }
        XCTAssertGreaterThanOrEqual(harnesses.count, 12, listed.output)
        let corpus = SharedFixtures.packageRoot.appendingPathComponent("Fuzz/corpus")
        for name in harnesses {
            let folder = corpus.appendingPathComponent(name)
            let seeds = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            XCTAssertFalse(seeds.isEmpty, "no committed seeds for harness \(name) in \(folder.path)")
            let replay = try ChildProcess.run(fuzz, [name, folder.path])
            XCTAssertEqual(replay.status, 0, "attest-fuzz \(name): \(replay.output.suffix(2000))")
            XCTAssertTrue(replay.output.contains("\(seeds.count) inputs, every invariant held"), replay.output)
        }
    }

    /// The runner's exit status means something: an unknown harness name is refused with a
    /// non-zero exit rather than replaying nothing.
    func testUnknownHarnessIsRefused() throws {
        let fuzz = try BuiltProducts.executable("attest-fuzz")
        let result = try ChildProcess.run(fuzz, ["no-such-harness", "/dev/null"])
        XCTAssertNotEqual(result.status, 0, result.output)
    }
}
