package dev.cuhandle;

import java.lang.ref.WeakReference;
import java.util.concurrent.ConcurrentLinkedQueue;

/** What every worker of the soak sees: its options, the shared handle and library, the deadline, the mailbox of handed-off buffers and the buffers leaked on purpose. */
final class SoakShared {
    final SoakMain.Options options;
    final SoakStats stats;
    final Handle shared;
    final Library library;
    final Kernel addOne;
    final Handle anchor;
    final long deadline;
    final ConcurrentLinkedQueue<SoakHandoff> mailbox = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<WeakReference<DeviceBuffer>> leaks = new ConcurrentLinkedQueue<>();

    SoakShared(SoakMain.Options options, SoakStats stats, Handle shared, Library library, Kernel addOne, Handle anchor, long deadline) {
        this.options = options;
        this.stats = stats;
        this.shared = shared;
        this.library = library;
        this.addOne = addOne;
        this.anchor = anchor;
        this.deadline = deadline;
    }
}
