import { briefSuite } from "./brief.e2e-suite";
import { personChannelSuite } from "./person-channel.e2e-suite";
import { personWorld, useSharedGateway } from "./real-gateway-world";
import { reviewPageSuite } from "./review-page.e2e-suite";

// The real-gateway suites of the person's side share one gateway whose world has the recording
// chat channel, a calendar and review links: a gateway start costs more CPU than most of their
// tests. The brief last: the dispatches its drafts send are left waiting (no daemon runs them).
const shared = useSharedGateway("person-world", personWorld);
reviewPageSuite(shared);
personChannelSuite(shared);
briefSuite(shared);
