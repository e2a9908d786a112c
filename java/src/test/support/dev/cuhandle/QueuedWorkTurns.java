package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * Runs a check that needs GPU work still queued when the host looks at it ("the copy is not done
 * yet", "close() waited for it"). On a loaded machine the host can take longer to queue the rest than
 * the work ahead of it takes to run (CI once saw a copy done behind 300 ms of work), and then there is
 * nothing left to check. So a turn that finds its work already done says so, and the next turn queues
 * four times more work; a turn that finds it still queued makes its checks, and those must hold.
 */
final class QueuedWorkTurns {
    /** The longest work queued, in milliseconds: past this, the machine is too slow for the check to mean anything. */
    static final int LONGEST_MS = 4800;

    /** One turn: queue {@code occupiedMs} of work and the rest; return false, having cleaned up, if the work was done too early. */
    interface Turn {
        boolean stillQueued(int occupiedMs) throws Exception;
    }

    private QueuedWorkTurns() {
    }

    /** Runs turns from {@code firstMs}, four times longer each, until one found its work still queued. */
    static void run(int firstMs, String what, Turn turn) throws Exception {
        for (int occupiedMs = firstMs; occupiedMs <= LONGEST_MS; occupiedMs *= 4) {
            if (turn.stillQueued(occupiedMs)) {
                return;
            }
            System.out.println("[gpu-tests] " + what + ": the work was done before the check behind " + occupiedMs
                    + " ms of queued work; trying again with more");
        }
        fail(what + ": the work was done before the check in every turn, even behind " + LONGEST_MS + " ms of queued work");
    }
}
