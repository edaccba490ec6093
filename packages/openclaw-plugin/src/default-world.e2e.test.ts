import { approvalSuite } from "./approval.e2e-suite";
import { daemonCrashSuite } from "./daemon-crash.e2e-suite";
import { gateSuite } from "./gate.e2e-suite";
import { useSharedGateway } from "./real-gateway-world";
import { remotePlanSuite } from "./remote-plan.e2e-suite";
import { reportBurstSuite } from "./report-burst.e2e-suite";

// The real-gateway suites whose world is the default one share one gateway (the remote plan's
// daemon works on a host of its own beside it): a gateway start costs more CPU than most of what
// these tests do. In this order: the burst last, as it leaves the most behind (25 reports); the
// approval's restart leaves a new gateway to the suites after it.
const shared = useSharedGateway("default-world");
gateSuite(shared);
approvalSuite(shared);
daemonCrashSuite(shared);
remotePlanSuite(shared);
reportBurstSuite(shared);
