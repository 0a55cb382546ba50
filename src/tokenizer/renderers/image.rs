//! Images in messages, for the vision renderers: dimensions read from PNG/JPEG headers
//! and the image-token counts of each model's image processor. (Being written.)
