import { personChannelSuite } from "./person-channel.e2e-suite";
import { personWorld, useSharedGateway } from "./real-gateway-world";
import { reviewPageSuite } from "./review-page.e2e-suite";

// The real-gateway suites of the person's side share one gateway whose world has the recording
// chat channel and review links: a gateway start costs more CPU than most of their tests. The
// person-channel suite last, as its last test kills the gateway twice.
const shared = useSharedGateway("person-world", personWorld);
reviewPageSuite(shared);
personChannelSuite(shared);
