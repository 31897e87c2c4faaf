-- pets_preprocess.lua: the classic torchvision preprocessing of a WebDataset
-- of pets, run on the targets (sample mode). Each sample holds image.jpg,
-- trimap.png (a class map: 1 pet, 2 background, 3 border) and cls.
--
--   image.jpg  -> image.npy: Resize(256), CenterCrop(224), ToTensor,
--                 Normalize(ImageNet mean, std): float32, 3 x 224 x 224
--   trimap.png -> trimap.npy: the same geometry with nearest-neighbour
--                 resizing (class values stay classes): uint8, 224 x 224
--   cls        -> kept
--
-- The same in torchvision, line by line:
--   T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(),
--              T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
--
-- A sample that holds a plain .jpg (the shorter WebDataset spelling) gets
-- the same treatment as .npy, and a .png beside it is taken as its trimap
-- (the samples examples/demo.sh shards with ishard).
--
-- Set it up:   shale etl init pets-preprocess examples/etl/pets_preprocess.lua --mode sample
-- Read through it:   curl 'http://GATEWAY/v1/objects/pets/shard-000.tar?etl_name=pets-preprocess'

local MEAN = { 0.485, 0.456, 0.406 }
local STD = { 0.229, 0.224, 0.225 }

local function image_tensor(bytes)
    local img = shale.image.decode(bytes)
    img = img:resize_short(256):center_crop(224, 224)
    return img:tensor{ mean = MEAN, std = STD }              -- float32, 3 x 224 x 224
end

local function class_map(bytes)
    local m = shale.image.decode(bytes, { grey = true })     -- one band: the class of each pixel
    m = m:resize_short(256, "nearest"):center_crop(224, 224)
    return m:tensor{ dtype = "uint8", layout = "HW" }        -- uint8, 224 x 224
end

function transform_sample(s, ctx)
    if s["image.jpg"] then
        s["image.npy"] = image_tensor(s["image.jpg"])
        s["image.jpg"] = nil
    end
    if s.jpg then
        s.npy = image_tensor(s.jpg)
        s.jpg = nil
        if s.png then       -- image.jpg + trimap.png named by extension only (as ishard makes them)
            s["trimap.npy"] = class_map(s.png)
            s.png = nil
        end
    end
    if s["trimap.png"] then
        s["trimap.npy"] = class_map(s["trimap.png"])
        s["trimap.png"] = nil
    end
    return s
end
