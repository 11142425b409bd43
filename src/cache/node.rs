//! One radix-tree node (`mem_cache/radix_cache.py: TreeNode`, with the HiCache fields
//! of `hiradix_cache.py`). Values are not index lists here: a node is on the device
//! (`value is not None`) or not, backed up on host (`host_value is not None`) or not,
//! and its length is `pages.len()`.

/// Arena index of a node. The root is [`ROOT`].
pub type NodeId = u32;
/// The root: `value=[]`, `host_value=[]` — neither evicted nor unbacked.
pub const ROOT: NodeId = 0;
pub(crate) const NIL: u32 = u32::MAX;

/// Eviction priority key (smaller is evicted first), then the node id as tiebreak.
pub type PrioKey = (i64, i64);

/// A page key: the trace's chained per-page hash (`get_hash_str`), used as is.
pub type PageKey = u64;

#[derive(Debug, Clone)]
pub struct Node {
    pub parent: NodeId,
    /// The node's key: its pages' chained hashes, in order.
    pub pages: Vec<PageKey>,
    /// `pages[0]` while the node is alive, kept beside the other fields: the key under
    /// which its parent finds it (deleting a node then reads no page vector).
    pub(crate) first: PageKey,
    pub children: Vec<NodeId>,
    /// Index of this node in its parent's `children` (O(1) unlink).
    pub(crate) pos_in_parent: u32,
    /// `value is not None`.
    pub on_device: bool,
    /// `host_value is not None` (`backuped`).
    pub backed_up: bool,
    /// Device pin, counted on the node and every ancestor (`inc_lock_ref`).
    pub lock_ref: u32,
    /// Host pin (`protect_host` / `release_host`).
    pub host_ref: u32,
    pub hit_count: u32,
    pub last_access: u64,
    pub creation: u64,
    pub priority: i64,
    /// Children that are on the device.
    pub n_device_children: u32,
    /// Children that are backed up.
    pub n_backed_children: u32,
    pub alive: bool,
    /// Key under which the node sits in each evictable set, if it does.
    pub(crate) dev_key: Option<PrioKey>,
    pub(crate) host_key: Option<PrioKey>,
    pub(crate) dup_key: Option<PrioKey>,
    /// Position ticket in 0.5.23's insertion-ordered `full_host_duplicates` (0 = absent).
    pub(crate) dup_seq: u64,
    /// `load_back_pending_id`: the anchor of an H2D load-back reading this node's host
    /// copy, until its ack ([`NIL`] = none; see `TreeRules::LOAD_BACK_PENDING`).
    pub(crate) load_back_pending: NodeId,
}

impl Node {
    pub fn len(&self) -> u64 {
        self.pages.len() as u64
    }
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }
    /// `evicted` in SGLang.
    pub fn evicted(&self) -> bool {
        !self.on_device
    }
}

impl Default for Node {
    fn default() -> Self {
        Self {
            parent: 0,
            pages: Vec::new(),
            first: 0,
            children: Vec::new(),
            pos_in_parent: 0,
            on_device: false,
            backed_up: false,
            lock_ref: 0,
            host_ref: 0,
            hit_count: 0,
            last_access: 0,
            creation: 0,
            priority: 0,
            n_device_children: 0,
            n_backed_children: 0,
            alive: false,
            dev_key: None,
            host_key: None,
            dup_key: None,
            dup_seq: 0,
            load_back_pending: NIL,
        }
    }
}
