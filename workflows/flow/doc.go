// Package flow holds what Durable Ralph's workflows share and none owns:
// routing a workspace's activities to the host that holds it (Host), the
// options of the GitHub and git activities, the typed search-attribute
// keys, and the reading of activity errors. It defines no workflow; each
// workflow has a package of its own beside it under workflows/.
package flow
